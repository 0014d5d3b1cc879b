"""The audit's words, typed once: the scenario's steps (:class:`StepName`), how a step's call
ended (:class:`Outcome`) and the hazards an object can have (:class:`Hazard`).

Each member is its string (the JSON value, the CLI's word, asv's parameter), and carries what
is said of it: a step what it does, an outcome its mark in a cell and its word in a timed
step's result, a hazard what it means. The scenario's subsets are named here by what they
are. The totals a dashboard tracks, and the hazard each counts, are
:data:`jitbench.hazards.HAZARDS`.
"""

from __future__ import annotations

from enum import StrEnum


class StepName(StrEnum):
    """A step of the scenario, in order; ``does``: what it does to the object."""

    does: str

    def __new__(cls, value: str, does: str) -> StepName:
        member = str.__new__(cls, value)
        member._value_, member.does = value, does
        return member

    # asv names a benchmark's parameters by their repr, and a change is one (bench_change).
    def __repr__(self) -> str:
        return repr(self.value)

    FIRST_CALL = "first_call", "the first call of a new instance"
    REPEAT_CALL = "repeat_call", "the same call again, nothing changed"
    NEW_STATIC = "new_static", "a flag set to a value not seen before"
    SEEN_STATIC = "seen_static", "the flag (or number) set back to a value seen before"
    SAME_SHAPE_ARRAY = (
        "same_shape_array", "an array or number field given new values (of its shape)"
    )  # fmt: skip
    NEW_SHAPE_ARRAY = "new_shape_array", "an array field replaced by one of a new shape"
    EQUAL_INSTANCE = "equal_instance", "a new instance built from the same field values"
    OTHER_INSTANCE = "other_instance", "a new instance with other values"
    FED_BACK = (
        "fed_back", "the object the call returned, called as a loop does (state = step(state, x))"
    )  # fmt: skip
    FED_BACK_AGAIN = (
        "fed_back_again", "the object that call returned, called in turn: the loop's next step"
    )  # fmt: skip


# Played after the others where the call returns an object of the object's type: a loop
# that feeds it back compiles again where its types (a weak type, a dtype, a shape) drift.
FED_BACK = (StepName.FED_BACK, StepName.FED_BACK_AGAIN)
# The steps every subject plays.
SCENARIO = tuple(s for s in StepName if s not in FED_BACK)
# The calls before any change: a new instance's first, and the same again.
CALLS = (StepName.FIRST_CALL, StepName.REPEAT_CALL)
# The steps that change the object (a field, or the instance itself).
CHANGES = tuple(s for s in SCENARIO if s not in CALLS)
# The changes the after-change benchmark times (other_instance is a cold call).
TIMED_CHANGES = tuple(s for s in CHANGES if s is not StepName.OTHER_INSTANCE)
# The steps where jit has seen all that the call needs, or a loop should: a compile there is
# a recompile (a number the call hashes aside: Step.hashed_number).
SEEN = (
    StepName.REPEAT_CALL, StepName.SEEN_STATIC, StepName.EQUAL_INSTANCE,
    StepName.SAME_SHAPE_ARRAY, *FED_BACK,
)  # fmt: skip


class Hazard(StrEnum):
    """A hazard of an object, by the name ``assert_jit_safe``'s ``allow=`` and advise's rows
    use; ``means``: what it is."""

    means: str

    def __new__(cls, value: str, means: str) -> Hazard:
        member = str.__new__(cls, value)
        member._value_, member.means = value, means
        return member

    STALE = "stale", (
        "a call returns a result computed for other values (a change jit does not see)"
    )  # fmt: skip
    ERROR = "error", (
        "a call raises under jit where the call without jit does not, wherever it raises "
        "(the object's own tree_unflatten included)"
    )  # fmt: skip
    LEAK = "leak", (
        "instances stay alive after the scenario dropped them (jit's cache holds them), "
        "or their arrays do where no instance is seen alive (a closure in a cache key "
        "keeps an array, or the instances cannot be weakly referenced)"
    )  # fmt: skip
    RECOMPILE = "recompile", (
        "a compile where nothing new was seen: the same call again, a flag set back to a "
        "value seen before, a new instance equal to one already called, new values of an "
        "array of the same shape (the call hashes them), or the object the call returned "
        "called in turn, as a loop does (its types drift)"
    )  # fmt: skip


class Outcome(StrEnum):
    """How a step's call ended, judged against the same call without jit: ``mark`` follows
    its traces/compiles in a cell, ``shown`` is its word in a timed step's result column."""

    mark: str
    shown: str

    def __new__(cls, value: str, mark: str, shown: str) -> Outcome:
        member = str.__new__(cls, value)
        member._value_, member.mark, member.shown = value, mark, shown
        return member

    CORRECT = "correct", "", ""
    # A result computed for other values: a change jit did not see.
    STALE = "stale", "!", "STALE"
    # The call raises under jit, and not without it.
    ERROR = "error", " E", "raised"
    # The call raises without jit too: nothing is known of jit.
    NOT_APPLICABLE = "n/a", " n/a", "n/a"
    # The change left the result without jit as it was: seen or not, jit returns the same.
    UNJUDGED = "unjudged", " ?", "not judged"

    @property
    def rejected(self) -> bool:
        """Whether the call cannot take the change: it raises, with jit or without."""
        return self in (Outcome.NOT_APPLICABLE, Outcome.ERROR)

    @property
    def tells(self) -> bool:
        """Whether the outcome tells something of jit (n/a and unjudged do not)."""
        return self not in (Outcome.NOT_APPLICABLE, Outcome.UNJUDGED)

    @property
    def hazard(self) -> Hazard | None:
        """The hazard this outcome is (a stale result, an error under jit), or None."""
        return {Outcome.STALE: Hazard.STALE, Outcome.ERROR: Hazard.ERROR}.get(self)
