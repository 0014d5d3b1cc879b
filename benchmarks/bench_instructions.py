"""Instructions per cached call and per dispatch, counted by Valgrind: opt-in, minutes.

Unlike a time, a count does not move with the machine's load, so a change of
a few percent in the dispatch path shows between two commits on a shared
runner. ``nox -s instructions`` runs this family (``JITBENCH_INSTRUCTIONS=1``);
otherwise, and where Valgrind is absent, every row is n/a with the reason.
"""

from jitbench import instructions

from .common import SIZES, STRATEGIES, Track


class Instructions(Track):
    """The calling thread's instructions per call, smallest size, ``cpu``.

    One Valgrind process counts every row (``setup_cache``); see
    ``jitbench.instructions`` for how a count is taken.
    """

    params = [STRATEGIES, [min(SIZES)], ["cpu"]]
    unit = instructions.COUNT_UNIT
    timeout = instructions.TIMEOUT_S

    def setup_cache(self):
        return instructions.table(instructions.strategy_rows(*self.params))

    def setup(self, table, strategy, size, device):
        self.counts = instructions.lookup(table, instructions.strategy_row(strategy, size, device))

    def track_cached_call_instructions(self, table, strategy, size, device):
        return self.counts.call

    def track_dispatch_instructions(self, table, strategy, size, device):
        return self.counts.dispatch
