"""How dispatch grows with pytree width, nesting depth and device count, and trace/compile
with program size and depth."""

from jitbench import suite

from .common import STRATEGIES, FittedSlope, Track


class DispatchVsWidth(FittedSlope):
    """Dispatch-only cached call with ``n_arrays`` array leaves of a small size.

    One process per point: three rounds made this family about a fifth of the
    default grid's minutes, and jit_per_call's compiles most of its samples.
    """

    params = [STRATEGIES, list(suite.WIDTHS)]
    param_names = ["strategy", "n_arrays"]
    repeat = (3, 10, 1.0)

    def time_dispatch(self, strategy, n_arrays):
        case = lambda: suite.Case.of(  # noqa: E731
            strategy, suite.SCALING_SIZE, suite.SCALING_DEVICE, n_arrays=n_arrays
        )
        self.reused(case).dispatch()


class CompileVsProgramSize(Track):
    """Trace and compile seconds of a cold first call with ``n_ops`` elementwise stages.

    One process measures the whole grid (``setup_cache``): per strategy one
    uncounted cold call, then one cold call per program size.
    """

    params = [STRATEGIES, list(suite.PROGRAM_SIZES)]
    param_names = ["strategy", "n_ops"]
    timeout = 900

    def setup_cache(self):
        return suite.stage_table(
            STRATEGIES, [suite.SCALING_SIZE], [suite.SCALING_DEVICE], suite.PROGRAM_SIZES, calls=1
        )

    def setup(self, table, strategy, n_ops):
        self.stages = table.get((strategy, suite.SCALING_SIZE, suite.SCALING_DEVICE, n_ops))
        if self.stages is None:
            raise NotImplementedError(f"{strategy} is not available here")

    def track_trace_seconds(self, table, strategy, n_ops):
        return self.stages.trace

    def track_compile_seconds(self, table, strategy, n_ops):
        return self.stages.compile


class CallVsDepth(FittedSlope):
    """Cached call and dispatch of a class of ``depth`` nested layers (``Shape.depth``)."""

    params = [STRATEGIES, list(suite.DEPTHS)]
    param_names = ["strategy", "depth"]
    repeat = (3, 10, 0.5)

    def _case(self, strategy, depth):
        return lambda: suite.Case.of(
            strategy, suite.SCALING_SIZE, suite.SCALING_DEVICE, depth=depth
        )

    def time_cached_call(self, strategy, depth):
        self.reused(self._case(strategy, depth)).call()

    def time_cached_call_dispatch(self, strategy, depth):
        self.reused(self._case(strategy, depth)).dispatch()


class CompileVsDepth(Track):
    """Trace and compile seconds of a cold first call with ``depth`` nested layers, the
    whole grid in one process (as :class:`CompileVsProgramSize`): the median of three
    calls, as a compile of 64 layers takes tenths of a second and one slow call would
    set a per-layer fit alone."""

    params = [STRATEGIES, list(suite.DEPTHS)]
    param_names = ["strategy", "depth"]
    timeout = 900

    def setup_cache(self):
        return suite.stage_table(
            STRATEGIES, [suite.SCALING_SIZE], [suite.SCALING_DEVICE], suite.DEPTHS, calls=3,
            axis="depth",
        )  # fmt: skip

    def setup(self, table, strategy, depth):
        self.stages = table.get((strategy, suite.SCALING_SIZE, suite.SCALING_DEVICE, depth))
        if self.stages is None:
            raise NotImplementedError(f"{strategy} is not available here")

    def track_trace_seconds(self, table, strategy, depth):
        return self.stages.trace

    def track_compile_seconds(self, table, strategy, depth):
        return self.stages.compile


class DispatchVsDeviceCount(FittedSlope):
    """Dispatch of a call sharded over 1, 2, 4 or 8 host devices, one process per count.

    XLA fixes the host device count when the backend starts, and every asv
    process starts without a backend, so each process sets its own count.
    """

    params = [STRATEGIES, list(suite.DEVICE_COUNTS)]
    param_names = ["strategy", "n_devices"]
    repeat = (3, 10, 1.0)

    def time_dispatch(self, strategy, n_devices):
        self.reused(lambda: suite.host_device_case(strategy, n_devices)).dispatch()
