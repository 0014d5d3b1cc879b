"""Errors that the command line turns into one line and exit status 2."""

from __future__ import annotations


class JitbenchError(Exception):
    """Bad input from a user: the message names the bad value and the valid choices."""


class DeviceUnavailable(NotImplementedError):
    """A device spec this host cannot serve.

    A subclass of NotImplementedError so that asv records the parameter
    combination as skipped (n/a) instead of failed.
    """


class StrategyUnavailable(NotImplementedError):
    """A strategy whose optional package is not installed (asv skips it)."""
