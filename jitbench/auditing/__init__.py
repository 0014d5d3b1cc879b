"""The audit: ``subject`` (one model of what is measured, a built-in strategy or a user's
object), ``scenario`` (what a user does to it), ``audit``, ``result`` and ``verdict``.
Design notes: docs/design.md."""
