"""Correctness hazards from the cache audit scenario, as tracked counts."""

from jitbench import suite

from .common import DEVICES, STRATEGIES, Benchmark


class Hazards(Benchmark):
    """Totals of the cache audit per strategy and device (see ``jitbench audit``)."""

    params = [STRATEGIES, DEVICES]
    param_names = ["strategy", "device"]
    timeout = 600

    def setup_cache(self):
        # One audit per strategy and device, shared by every track below.
        return suite.audit_all(STRATEGIES, DEVICES)

    def setup(self, totals, strategy, device):
        if (strategy, device) not in totals:
            raise NotImplementedError(f"{strategy} on {device} is not available here")

    def track_compiles(self, totals, strategy, device):
        return totals[strategy, device]["compiles"]

    track_compiles.unit = "compiles"

    def track_traces(self, totals, strategy, device):
        return totals[strategy, device]["traces"]

    track_traces.unit = "traces"

    def track_stale_results(self, totals, strategy, device):
        return totals[strategy, device]["stale_results"]

    track_stale_results.unit = "stale results"

    def track_errors(self, totals, strategy, device):
        return totals[strategy, device]["errors"]

    track_errors.unit = "errors"

    def track_leaked_instances(self, totals, strategy, device):
        return totals[strategy, device]["leaked_instances"]

    track_leaked_instances.unit = "instances"

    def track_repeat_call_compiles(self, totals, strategy, device):
        return totals[strategy, device]["repeat_call_compiles"]

    track_repeat_call_compiles.unit = "compiles"
