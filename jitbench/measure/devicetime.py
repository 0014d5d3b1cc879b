"""The device's own time per call, from JAX's profiler: a loop of calls traced, and the time
the device's plane of the profile shows it running XLA programs, over the calls. The host's
dispatch and the round trip do not count: what is left is what the device itself spends. On
the CPU, whose programs run on the host's own threads, there is no device plane: None.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jax.profiler import ProfileData

# The lines of a device's plane that hold its programs' runs, in order of preference:
# each run of a compiled program, else each of its operations (XLA's profiler schema).
LINES = ("XLA Modules", "XLA Ops")


def device_seconds(loop: Callable[[int], object], calls: int, platform: str) -> float | None:
    """Seconds per call the ``platform`` device spends running ``loop(calls)``'s programs
    (the loop warm, its programs compiled), from a profile written to a temporary folder
    (removed after); None where the profile shows no such device (the CPU)."""
    if platform == "cpu":
        return None
    import jax

    options = jax.profiler.ProfileOptions()
    for name, value in (("python_tracer_level", 0), ("enable_hlo_proto", False)):
        if hasattr(options, name):  # the host's Python calls are not needed, nor the HLO
            setattr(options, name, value)
    with tempfile.TemporaryDirectory(prefix="jitbench-profile-") as folder:
        jax.profiler.start_trace(folder, profiler_options=options)
        try:
            loop(calls)
        finally:
            jax.profiler.stop_trace()
        written = sorted(Path(folder).glob("**/*.xplane.pb"))
        if not written:
            return None
        data = jax.profiler.ProfileData.from_file(str(written[-1]))
    busy = busy_seconds(data, platform)
    return None if busy is None else busy / calls


def busy_seconds(data: ProfileData, platform: str) -> float | None:
    """Seconds the profile's planes of ``platform``'s devices (``/device:TPU:0``) show them
    running programs: the union of the events of their first line of :data:`LINES` (an
    overlap counted once); None where it has no such plane or line."""
    plane_name = re.compile(rf"/device:{re.escape(platform.upper())}:\d+")
    spans = []
    found = False
    for plane in data.planes:
        if not plane_name.fullmatch(plane.name):
            continue
        lines = {line.name: line for line in plane.lines}
        line = next((lines[name] for name in LINES if name in lines), None)
        if line is None:
            continue
        found = True
        spans += [(event.start_ns, event.end_ns) for event in line.events]
    if not found:
        return None
    busy, reached = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reached:
            busy += end - max(start, reached)
            reached = end
    return busy / 1e9
