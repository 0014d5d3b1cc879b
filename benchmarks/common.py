"""The grids the suite's benchmark classes share, and the built-in strategies' rows.

Each class joins a family of ``jitbench.suite.families`` (the one definition of
what is timed or tracked, shared with a target's rows) to :class:`Benchmark`, the
strategy x size x device grid, in the manner of scipy's ``XPBenchmark``: a
combination this host cannot run raises NotImplementedError, which asv records
as n/a.
"""

from jitbench.errors import JitbenchError
from jitbench.measure.case import Row
from jitbench.suite import grid

try:
    STRATEGIES = grid.strategy_names()
    SIZES = grid.sizes()
    LOOP_SIZES = grid.loop_sizes()
    EDGE_SIZES = grid.edge_sizes()
    DEVICES = grid.devices()
    UNSHARDED_DEVICES = grid.unsharded_devices()
except JitbenchError as exc:
    # A bad JITBENCH_* variable: one line in asv's output instead of a traceback
    # from inside its discovery of the suite.
    raise SystemExit(f"jitbench: error: {exc}") from None


class Benchmark:
    """strategy x size x device; one process per combination and round."""

    params = [STRATEGIES, SIZES, DEVICES]
    param_names = ["strategy", "size", "device"]
    rounds = 1
    timeout = 300
    # 2: generated classes with nothing of jitbench on the call path, and cpu rows
    # on the host's default device configuration (results of version 1 differ).
    version = "2"

    def row(self, strategy, size, device):
        return Row(strategy, device, size)


class PerDevice(Benchmark):
    """strategy x device, at a size of the class's own (``size``)."""

    params = [STRATEGIES, DEVICES]
    param_names = ["strategy", "device"]
    size = None

    def row(self, strategy, device):
        return Row(strategy, device, self.size)


class Track(Benchmark):
    """A recorded number, not a time: one per process."""

    unit = "seconds"
