"""The option sets and defaults the commands offer, each typed once.

The command line (:mod:`jitbench.cli`) parses with them and the modules that
implement each command read them from here; nothing heavy is imported, so the
parser is built without pandas, asv or JAX.
"""

from __future__ import annotations

FORMATS = ("table", "json", "csv")
# The CI providers jitbench init --ci writes a workflow for (jitbench.suite.ci).
CI_PROVIDERS = ("github",)
# What jitbench compare's BASE and HEAD name.
COMPARE_BY = ("commit", "env", "machine")
# jitbench validate's phases, in the order they run; the default leaves counts out (Valgrind).
VALIDATE_PHASES = ("fidelity", "accuracy", "noise", "sensitivity", "counts")
DEFAULT_PHASES = VALIDATE_PHASES[:4]
# The array length of a built-in strategy's audit and timing (jitbench audit, jitbench time).
DEFAULT_SIZE = 64
# Samples per figure of jitbench time.
REPEAT = 7
# The fields the audit's scenario plays by default (jitbench.targets.fields.choose), in words
# (--fields' help): at most DEFAULT_VALUES statics and numbers and DEFAULT_ARRAYS arrays.
DEFAULT_ARRAYS = 3
DEFAULT_VALUES = 12
DEFAULT_FIELDS = (
    "every field in jit's key (private ones too), then the public attributes jit never "
    "sees, one per group of list items, up to {values} statics or numbers and {arrays} "
    "arrays; the rest is listed as skipped"
)
# The change of an instruction count that jitbench compare calls a change (why 1%: the
# counts checks of docs/counting.md).
COUNT_TOLERANCE = 0.01
