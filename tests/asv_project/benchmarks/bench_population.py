from ._fixture import PER_CALL, STRATEGIES, check_device

INSTANCES = [1, 100, 10000]
# The fixture's cliff: past 8,192 live instances bound_method_jit's later jits fall back
# to Python (the shape of jax issue 39078), and static_self_id_hash keeps every instance.
CLIFF = 8192


class Population:
    params = (STRATEGIES, INSTANCES, ["cpu"])
    param_names = ["strategy", "instances", "device"]

    def setup(self, strategy, instances, device):
        check_device(device)
        self.lost = strategy == "bound_method_jit" and instances > CLIFF

    def track_first_call(self, strategy, instances, device):
        return PER_CALL[strategy] * 1e-6

    def track_first_call_dispatch(self, strategy, instances, device):
        return PER_CALL[strategy] * 0.5e-6

    def track_after_jit_call(self, strategy, instances, device):
        return (30 if self.lost else 3) * 1e-6

    def track_after_jit_dispatch(self, strategy, instances, device):
        return (20 if self.lost else 2) * 1e-6

    def track_after_jit_python_calls(self, strategy, instances, device):
        return 12 if self.lost else 0

    track_after_jit_python_calls.unit = "calls"

    def track_build_seconds(self, strategy, instances, device):
        return instances * PER_CALL[strategy] * 1e-4

    def track_peak_rss(self, strategy, instances, device):
        return 2e8 + instances * 1e4

    track_peak_rss.unit = "bytes"

    def track_kept_alive(self, strategy, instances, device):
        return instances if strategy == "static_self_id_hash" else 0

    track_kept_alive.unit = "instances"
