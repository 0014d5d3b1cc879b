"""The option sets and defaults the commands offer, each typed once.

The command line (:mod:`jitbench.cli`) parses with them and the modules that
implement each command read them from here; nothing heavy is imported, so the
parser is built without pandas, asv or JAX.
"""

from __future__ import annotations

FORMATS = ("table", "json", "csv")
# What jitbench compare's BASE and HEAD name.
COMPARE_BY = ("commit", "env", "machine")
# jitbench validate's phases, in the order they run; the default leaves counts out (Valgrind).
VALIDATE_PHASES = ("fidelity", "accuracy", "noise", "sensitivity", "counts")
DEFAULT_PHASES = VALIDATE_PHASES[:4]
# The array length of a built-in strategy's audit and timing (jitbench audit, jitbench time).
DEFAULT_SIZE = 64
# Samples per figure of jitbench time.
REPEAT = 7
# The array fields the audit's scenario plays by default (every static field plays).
DEFAULT_ARRAYS = 3
# The change of an instruction count that jitbench compare calls a change (why 1%: the
# counts checks of docs/counting.md).
COUNT_TOLERANCE = 0.01
