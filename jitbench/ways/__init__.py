"""The ways ``jitbench advise`` compares: ``catalog`` (the ways of each kind of object,
entries of :mod:`jitbench.strategies.catalog`, and the subject that plays them) and
``builders`` (how each is built from the user's object and method). Design notes:
docs/design.md."""
