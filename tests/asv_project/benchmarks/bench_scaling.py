import time

from ._fixture import PER_CALL, STRATEGIES, spin

WIDTHS = [1, 10, 100, 1000]


class DispatchVsWidth:
    params = (STRATEGIES, WIDTHS)
    param_names = ["strategy", "n_arrays"]

    def time_dispatch(self, strategy, n_arrays):
        spin(1 + PER_CALL[strategy] * n_arrays / 100)


class CompileVsProgramSize:
    # Exact linear costs, so the report's fits can be checked to the digit.
    params = (STRATEGIES, WIDTHS)
    param_names = ["strategy", "n_ops"]
    unit = "seconds"

    def setup(self, strategy, n_ops):
        self.factor = 0 if strategy == "eager" else PER_CALL[strategy]

    def track_trace_seconds(self, strategy, n_ops):
        return self.factor * (1e-3 + 2e-5 * n_ops)

    def track_compile_seconds(self, strategy, n_ops):
        return self.factor * (2e-3 + 1e-4 * n_ops)


class CallVsDepth:
    params = (STRATEGIES, [1, 16])
    param_names = ["strategy", "depth"]

    def time_cached_call(self, strategy, depth):
        spin(2 + PER_CALL[strategy] * depth / 10)

    def time_cached_call_dispatch(self, strategy, depth):
        spin(1 + PER_CALL[strategy] * depth / 10)


class CompileVsDepth:
    # Exact linear costs, as CompileVsProgramSize's.
    params = (STRATEGIES, [1, 16])
    param_names = ["strategy", "depth"]
    unit = "seconds"

    def setup(self, strategy, depth):
        self.factor = 0 if strategy == "eager" else PER_CALL[strategy]

    def track_trace_seconds(self, strategy, depth):
        return self.factor * (1e-3 + 3e-4 * depth)

    def track_compile_seconds(self, strategy, depth):
        return self.factor * (2e-3 + 5e-4 * depth)


class DispatchVsDeviceCount:
    params = (STRATEGIES, [1, 2, 4, 8])
    param_names = ["strategy", "n_devices"]
    timer = time.process_time

    def time_dispatch(self, strategy, n_devices):
        spin(1 + PER_CALL[strategy] * n_devices / 4)
