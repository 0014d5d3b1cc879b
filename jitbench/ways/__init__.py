"""The ways ``jitbench advise`` compares: ``catalog`` (each way, by kind of object, and the
subject that plays it) and ``builders`` (how each is built from the user's object and
method). Design notes: docs/design.md."""
