"""The device rows: every strategy on each device of the host, the accelerator beside the CPU.

Opt-in (``python -m jitbench device-run``, ``JITBENCH_DEVICE_ROWS=1``): the whole grid is
measured in one process, in the family's ``setup_cache``, so an accelerator is opened once a
run instead of once a row; otherwise every row is n/a with the reason.
"""

from jitbench.auditing.scenario import TIMED_CHANGES
from jitbench.suite import families

from .common import LOOP_SIZES, SIZES, STRATEGIES, UNSHARDED_DEVICES, Track


class DeviceCalls(families.DeviceCalls, Track):
    """Dispatch, synchronous call and loop per call, sizes up to 1e8."""

    params = [STRATEGIES, LOOP_SIZES, UNSHARDED_DEVICES]


class DeviceFirstCall(families.DeviceFirstCall, Track):
    """The cold first call."""

    params = [STRATEGIES, SIZES, UNSHARDED_DEVICES]


class DeviceAfterChange(families.DeviceAfterChange, Track):
    """The call right after each change."""

    params = [STRATEGIES, SIZES, UNSHARDED_DEVICES, list(TIMED_CHANGES)]
