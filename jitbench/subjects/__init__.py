"""What is measured, and how it is judged: ``subject`` (one model of a built-in strategy and of
a user's object), ``scenario``, ``audit``, ``verdict``, and ``ways`` (``jitbench advise``).
Design notes: docs/design.md."""
