"""Instructions per call, counted by Valgrind: ``callgrind`` (the counted process and its
dumps), ``instructions`` (rows, the table asv reads, the process that counts them) and
``worker`` (what runs under Valgrind). Design notes: docs/counting.md."""
