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


# Exact linear costs, as the counts above: 184 instructions a frame per cached call, 92
# per dispatch (JAX's traceback walks), none with tracebacks off; a layer costs PER_CALL.
class InstructionsVsCallerDepth:
    params = (STRATEGIES, [0, 10, 50], ["on", "off"])
    param_names = ["strategy", "frames", "tracebacks"]
    unit = "instructions"

    def setup(self, strategy, frames, tracebacks):
        pass

    def track_cached_call_instructions(self, strategy, frames, tracebacks):
        walks = 184 * frames if tracebacks == "on" else 0
        return PER_CALL[strategy] * PER_CALL_INSTRUCTIONS + walks

    def track_dispatch_instructions(self, strategy, frames, tracebacks):
        walks = 92 * frames if tracebacks == "on" else 0
        return PER_CALL[strategy] * PER_CALL_INSTRUCTIONS / 2 + walks


class InstructionsVsDepth:
    params = (STRATEGIES, [1, 16])
    param_names = ["strategy", "depth"]
    unit = "instructions"

    def track_cached_call_instructions(self, strategy, depth):
        return PER_CALL[strategy] * (PER_CALL_INSTRUCTIONS + depth * 100)

    def track_dispatch_instructions(self, strategy, depth):
        return PER_CALL[strategy] * (PER_CALL_INSTRUCTIONS + depth * 100) / 2
