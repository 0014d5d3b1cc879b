"""The grids and timing attributes the suite's benchmark classes share.

Each class extends one of these and declares only what differs, in the
manner of scipy's ``XPBenchmark``: parameters come from ``jitbench.suite``
(strategies, sizes, the devices this host has), and a parameter combination
this host cannot run raises NotImplementedError, which asv records as n/a.
"""

from jitbench import suite
from jitbench.errors import JitbenchError

try:
    STRATEGIES = suite.strategy_names()
    SIZES = suite.sizes()
    EDGE_SIZES = suite.edge_sizes()
    DEVICES = suite.devices()
    UNSHARDED_DEVICES = suite.unsharded_devices()
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


class OneCall(suite.OneCallTiming, Benchmark):
    """Each sample times exactly one call, after a ``setup`` that prepares it."""


class ManyCalls(suite.Cached, suite.ManyCallsTiming, Benchmark):
    """Each sample times ``number`` cached calls (see ``jitbench.suite.Cached``), three
    rounds (``jitbench.suite.ManyCallsTiming`` says why)."""


class FittedSlope(ManyCalls):
    """A point of a grid the report fits a slope over: one process per point, and n/a for
    a strategy that compiles on every call (``jitbench.suite.Reused``), whose slope would
    be a compile's, which the trace and compile rows measure."""

    number = 20
    rounds = 1

    def reused(self, case):
        """The point's prepared call, built on first use (``ManyCalls.cached``)."""
        return self.cached(case, suite.Reused)


class Track(Benchmark):
    """A recorded number, not a time: one per process."""

    unit = "seconds"
