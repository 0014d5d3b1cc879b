"""The device's own time per call, from JAX's profiler: loops of calls traced in one profile,
and the time the device's plane of the profile shows it running XLA programs during each
loop, over its calls. The host's
dispatch and the round trip do not count: what is left is what the device itself spends. On
the CPU, whose programs run on the host's own threads, there is no device plane: None.
"""

from __future__ import annotations

import math
import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jax.profiler import ProfileData

# The lines of a device's plane that hold its programs' runs, in order of preference:
# each run of a compiled program, else each of its operations (XLA's profiler schema).
LINES = ("XLA Modules", "XLA Ops")
# The name of the host's annotation around each loop, its index after it.
MARK = "jitbench-loop-"


def device_seconds(
    loops: Sequence[tuple[Callable[[int], object], int]], platform: str
) -> list[float | None]:
    """Seconds per call the ``platform`` device spends running each ``loop(calls)``'s
    programs (each loop warm, its programs compiled), from one profile written to a temporary
    folder (removed after): each loop inside an annotation of the host's, and the device's runs
    that start between one loop's annotation and the next counted for that loop (each loop
    waits for its results before the next begins). None for each where the profile shows no
    such device (the CPU) or not the annotations. One profile for them all: stopping one costs
    0.65 s on the TPU v5e."""
    if platform == "cpu":
        return [None] * len(loops)
    import jax

    options = jax.profiler.ProfileOptions()
    for name, value in (("python_tracer_level", 0), ("enable_hlo_proto", False)):
        if hasattr(options, name):  # the host's Python calls are not needed, nor the HLO
            setattr(options, name, value)
    with tempfile.TemporaryDirectory(prefix="jitbench-profile-") as folder:
        jax.profiler.start_trace(folder, profiler_options=options)
        try:
            for index, (loop, calls) in enumerate(loops):
                with jax.profiler.TraceAnnotation(f"{MARK}{index}"):
                    loop(calls)
        finally:
            jax.profiler.stop_trace()
        written = sorted(Path(folder).glob("**/*.xplane.pb"))
        if not written:
            return [None] * len(loops)
        data = jax.profiler.ProfileData.from_file(str(written[-1]))
    return per_loop(data, platform, [calls for _, calls in loops])


def per_loop(data: ProfileData, platform: str, calls: Sequence[int]) -> list[float | None]:
    """Each loop's seconds per call in ``data``: the device's runs that start between its
    annotation's start and the next loop's, over its ``calls``."""
    starts = marks(data, len(calls))
    if starts is None:
        return [None] * len(calls)
    found = []
    for n, start, end in zip(calls, starts, [*starts[1:], math.inf], strict=True):
        busy = busy_seconds(data, platform, (start, end))
        found.append(None if busy is None else busy / n)
    return found


def marks(data: ProfileData, count: int) -> list[float] | None:
    """When each of the ``count`` loops' annotations began (the profile's nanoseconds, as its
    device planes count them), or None where one is missing."""
    starts: dict[str, float] = {}
    for plane in data.planes:
        if plane.name.startswith("/host:"):
            for line in plane.lines:
                for event in line.events:
                    if event.name.startswith(MARK):
                        starts.setdefault(event.name, event.start_ns)
    found = [starts.get(f"{MARK}{index}") for index in range(count)]
    return None if None in found else [float(s) for s in found if s is not None]


def busy_seconds(
    data: ProfileData, platform: str, window: tuple[float, float] = (-math.inf, math.inf)
) -> float | None:
    """Seconds the profile's planes of ``platform``'s devices (``/device:TPU:0``) show them
    running programs: the union of the events of their first line of :data:`LINES` (an
    overlap counted once) that start within ``window`` (nanoseconds, the end excluded); None
    where it has no such plane or line."""
    low, high = window
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
        spans += [(e.start_ns, e.end_ns) for e in line.events if low <= e.start_ns < high]
    if not found:
        return None
    busy, reached = 0.0, float("-inf")
    for start, end in sorted(spans):
        if end > reached:
            busy += end - max(start, reached)
            reached = end
    return busy / 1e9
