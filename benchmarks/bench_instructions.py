"""Instructions per cached call and per dispatch, counted by Valgrind: opt-in, minutes.

Unlike a time, a count does not move with the machine's load, so a change of
a few percent in the dispatch path shows between two commits on a shared
runner. ``nox -s instructions`` runs this family (``JITBENCH_INSTRUCTIONS=1``);
otherwise, and where Valgrind is absent, every row is n/a with the reason.
"""

from jitbench.suite import families, grid

from .common import SIZES, STRATEGIES, Track


class Instructions(families.Instructions, Track):
    """The calling thread's instructions per call, smallest size, ``cpu``."""

    params = [STRATEGIES, [min(SIZES)], ["cpu"]]

    def setup_cache(self):
        return self.counts()


class InstructionsVsCallerDepth(families.InstructionsVsCallerDepth, Track):
    """Per call, made from 0, 10 or 50 frames more, JAX's tracebacks on and off."""

    params = [STRATEGIES, list(grid.CALLER_FRAMES), list(families.TRACEBACKS)]

    def setup_cache(self):
        return self.counts()


class InstructionsVsDepth(families.InstructionsVsDepth, Track):
    """Per call of a class of 1, 4, 16 or 64 nested layers."""

    params = [STRATEGIES, list(grid.DEPTHS)]

    def setup_cache(self):
        return self.counts()
