from ._fixture import PER_CALL, SIZES, STRATEGIES, check_device

# Counts are exact: the same in every run of unchanged code (no JITBENCH_FIXTURE_SLOW).
PER_CALL_INSTRUCTIONS = 1000


class Instructions:
    params = (STRATEGIES, [min(SIZES)], ["cpu"])
    param_names = ["strategy", "size", "device"]
    unit = "instructions"

    def setup(self, strategy, size, device):
        check_device(device)

    def track_cached_call_instructions(self, strategy, size, device):
        return PER_CALL[strategy] * PER_CALL_INSTRUCTIONS

    def track_dispatch_instructions(self, strategy, size, device):
        return PER_CALL[strategy] * PER_CALL_INSTRUCTIONS / 2
