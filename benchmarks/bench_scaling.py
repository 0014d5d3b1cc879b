"""How dispatch grows with pytree width, nesting depth and device count, and trace/compile
with program size and depth."""

from jitbench.measure import case
from jitbench.measure.case import Row
from jitbench.strategies.codegen import Shape
from jitbench.suite import families, grid

from .common import STRATEGIES, Benchmark, Track


class FittedSlope(families.Cached, families.ManyCallsTiming, Benchmark):
    """A point of a grid the report fits a slope over (the shape's ``axis``): one process per
    point, and n/a for a strategy that compiles on every call
    (``jitbench.measure.case.Reused``), whose slope would be a compile's, which the trace
    and compile rows measure."""

    number = 20
    rounds = 1

    def row(self, strategy, value):
        return Row(strategy, grid.SCALING_DEVICE, grid.SCALING_SIZE, Shape(**{self.axis: value}))


class _StagesVs(Track):
    """Trace and compile seconds of a cold first call against the shape's ``axis``, the
    whole grid in one process (``setup_cache``): per strategy one uncounted cold call,
    then the median of ``calls`` cold calls per point."""

    timeout = 900

    def table(self):
        """The whole grid's stages (``setup_cache``: each subclass defines its own, as asv
        shares the result of one setup_cache function between the classes that use it)."""
        return case.stage_table(
            STRATEGIES, [grid.SCALING_SIZE], [grid.SCALING_DEVICE], self.params[1],
            calls=self.calls, axis=self.axis,
        )  # fmt: skip

    def setup(self, table, strategy, value):
        self.stages = table.get((strategy, grid.SCALING_SIZE, grid.SCALING_DEVICE, value))
        if self.stages is None:
            raise NotImplementedError(f"{strategy} is not available here")

    def track_trace_seconds(self, table, strategy, value):
        return self.stages.trace

    def track_compile_seconds(self, table, strategy, value):
        return self.stages.compile


class DispatchVsWidth(FittedSlope):
    """Dispatch-only cached call with ``n_arrays`` array leaves of a small size.

    One process per point: three rounds made this family about a fifth of the
    default grid's minutes, and jit_per_call's compiles most of its samples.
    """

    params = [STRATEGIES, list(grid.WIDTHS)]
    param_names = ["strategy", "n_arrays"]
    axis = "n_arrays"
    repeat = (3, 10, 1.0)

    def time_dispatch(self, strategy, n_arrays):
        self.prepared((strategy, n_arrays), case.Reused).dispatch()


class CompileVsProgramSize(_StagesVs):
    """Trace and compile seconds of a cold first call with ``n_ops`` elementwise stages."""

    params = [STRATEGIES, list(grid.PROGRAM_SIZES)]
    param_names = ["strategy", "n_ops"]
    axis, calls = "n_ops", 1

    def setup_cache(self):
        return self.table()


class CallVsDepth(FittedSlope):
    """Cached call and dispatch of a class of ``depth`` nested layers (``Shape.depth``)."""

    params = [STRATEGIES, list(grid.DEPTHS)]
    param_names = ["strategy", "depth"]
    axis = "depth"
    repeat = (3, 10, 0.5)

    def time_cached_call(self, strategy, depth):
        self.prepared((strategy, depth), case.Reused).call()

    def time_cached_call_dispatch(self, strategy, depth):
        self.prepared((strategy, depth), case.Reused).dispatch()


class CompileVsDepth(_StagesVs):
    """Trace and compile seconds of a cold first call with ``depth`` nested layers: the
    median of three calls, as a compile of 64 layers takes tenths of a second and one
    slow call would set a per-layer fit alone."""

    params = [STRATEGIES, list(grid.DEPTHS)]
    param_names = ["strategy", "depth"]
    axis, calls = "depth", 3

    def setup_cache(self):
        return self.table()


class DispatchVsDeviceCount(FittedSlope):
    """Dispatch of a call sharded over 1, 2, 4 or 8 host devices, one process per count.

    XLA fixes the host device count when the backend starts, and every asv
    process starts without a backend, so each process sets its own count.
    """

    params = [STRATEGIES, list(grid.DEVICE_COUNTS)]
    param_names = ["strategy", "n_devices"]
    repeat = (3, 10, 1.0)

    def subject(self, strategy, n_devices):
        return case.host_device_subject(strategy, grid.SCALING_SIZE, n_devices)

    def time_dispatch(self, strategy, n_devices):
        self.prepared((strategy, n_devices), case.Reused).dispatch()
