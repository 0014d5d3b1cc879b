"""How dispatch grows with pytree width, and trace/compile with program size."""

from jitbench import suite

STRATEGIES = suite.strategy_names()


class DispatchVsWidth(suite.Cached):
    """Dispatch-only cached call with ``n_arrays`` array leaves of a small size."""

    params = [STRATEGIES, list(suite.WIDTHS)]
    param_names = ["strategy", "n_arrays"]
    number = 20
    repeat = (3, 10, 1.0)
    warmup_time = 0.05
    rounds = 1
    timeout = 300
    version = "1"

    def time_dispatch(self, strategy, n_arrays):
        size, device = suite.SCALING_SIZE, suite.SCALING_DEVICE
        self.cached(strategy, size, device, n_arrays=n_arrays).dispatch()


class CompileVsProgramSize:
    """Trace and compile seconds of a cold first call with ``n_ops`` elementwise stages."""

    params = [STRATEGIES, list(suite.PROGRAM_SIZES)]
    param_names = ["strategy", "n_ops"]
    unit = "seconds"
    rounds = 1
    timeout = 300
    version = "1"

    def setup(self, strategy, n_ops):
        suite.require(strategy, suite.SCALING_DEVICE)

    def track_trace_seconds(self, strategy, n_ops):
        stages = suite.first_call_stages(
            strategy, suite.SCALING_SIZE, suite.SCALING_DEVICE, n_ops=n_ops
        )
        return stages["trace"]

    def track_compile_seconds(self, strategy, n_ops):
        stages = suite.first_call_stages(
            strategy, suite.SCALING_SIZE, suite.SCALING_DEVICE, n_ops=n_ops
        )
        return stages["compile"]


class DispatchVsDeviceCount:
    """Dispatch of a call sharded over 1, 2, 4 or 8 host devices, each count in its own process.

    XLA fixes the host device count when the backend starts, hence a fresh
    interpreter per sample (``timeraw_``) with its own ``XLA_FLAGS``.
    """

    params = [STRATEGIES, list(suite.DEVICE_COUNTS)]
    param_names = ["strategy", "n_devices"]
    number = 50
    repeat = 2
    warmup_time = 0.0
    rounds = 1
    timeout = 300
    version = "1"

    def setup(self, strategy, n_devices):
        suite.require(strategy, "cpu")

    def timeraw_dispatch(self, strategy, n_devices):
        return suite.device_count_code(strategy, n_devices)
