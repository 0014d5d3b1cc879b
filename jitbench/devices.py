"""Device specs (``cpu``, ``gpu``, ``tpu``, each also ``-sharded``): where a benchmark's arrays
live, and whether this host has it, decided without starting JAX where possible.

An absent device raises :class:`~jitbench.errors.DeviceUnavailable` (asv: skipped).
Design notes (sharding, host devices): docs/design.md.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import os
import re
from typing import TYPE_CHECKING

from jitbench.errors import DeviceUnavailable, JitbenchError

if TYPE_CHECKING:
    import jax
    import numpy as np

PLATFORMS = ("cpu", "gpu", "tpu")
DEVICE_SPECS = ("cpu", "cpu-sharded", "gpu", "gpu-sharded", "tpu", "tpu-sharded")
HOST_DEVICE_COUNT = 4
_HOST_FLAG = "--xla_force_host_platform_device_count"


def ensure_host_devices(n: int = HOST_DEVICE_COUNT) -> None:
    """Give the CPU ``n`` devices by appending to ``XLA_FLAGS`` (a user's own count wins);
    only before anything asks JAX for a device (XLA reads it when the backend starts)."""
    flags = os.environ.get("XLA_FLAGS", "")
    if _HOST_FLAG not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {_HOST_FLAG}={n}".strip()


def parse_spec(spec: str) -> tuple[str, bool]:
    """Split a spec into (platform, sharded); an unknown spec lists the valid ones."""
    if spec not in DEVICE_SPECS:
        raise JitbenchError(f"unknown device {spec!r}; valid: {', '.join(DEVICE_SPECS)}")
    platform, _, suffix = spec.partition("-")
    return platform, suffix == "sharded"


@functools.cache
def plugin_installed(platform: str) -> bool:
    """Whether JAX could have a ``platform`` backend here, decided without starting JAX."""
    # Not by asking JAX (why: docs/design.md).
    if platform == "cpu":
        return True
    allowed = os.environ.get("JAX_PLATFORMS", "")
    aliases = {"gpu": ("gpu", "cuda", "rocm"), "tpu": ("tpu",)}[platform]
    if allowed and not any(p in allowed.split(",") for p in aliases):
        return False
    pattern = {"gpu": r"^jax[-_](cuda|rocm)\d*[-_]plugin$", "tpu": r"^libtpu"}[platform]
    return any(
        re.match(pattern, (dist.metadata["Name"] or "").lower())
        for dist in importlib.metadata.distributions()
    )


def platform_devices(platform: str) -> list[jax.Device]:
    """All devices of ``platform`` on this host (empty when it has none)."""
    if not plugin_installed(platform):
        return []
    import jax

    try:
        return list(jax.devices(platform))
    except RuntimeError:
        return []


def default_platform() -> str:
    """The platform JAX puts a new array on: its default device's (``jax_default_device``,
    a platform's name or a Device, else JAX's first device)."""
    import jax

    chosen = jax.config.jax_default_device
    if chosen is None:
        return jax.devices()[0].platform
    return chosen if isinstance(chosen, str) else chosen.platform


@dataclasses.dataclass(frozen=True)
class Placement:
    """Where arrays go for one device spec; ``put`` places a host array there."""

    spec: str
    devices: tuple[jax.Device, ...]
    sharded: bool

    @property
    def n_devices(self) -> int:
        return len(self.devices) if self.sharded else 1

    def round_size(self, size: int) -> int:
        """``size`` rounded up to a multiple of the shard count."""
        n = self.n_devices
        return -(-size // n) * n

    def sharding(self, ndim: int) -> jax.sharding.Sharding:
        import jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        if not self.sharded:
            # JAX 0.12.1 deprecates the class for its factory; older JAX has the class alone.
            make = getattr(jax.sharding, "make_single_device_sharding", None)
            if make is not None:
                return make(self.devices[0])
            return jax.sharding.SingleDeviceSharding(self.devices[0])
        mesh = Mesh(list(self.devices), ("x",))
        return NamedSharding(mesh, PartitionSpec(*([None] * (ndim - 1)), "x"))

    def put(self, array: np.ndarray | jax.Array) -> jax.Array:
        """Place a host array (its last axis must divide among the shards)."""
        import jax

        return jax.device_put(array, self.sharding(max(array.ndim, 1)))


def resolve(spec: str) -> Placement:
    """The placement for ``spec``, or DeviceUnavailable when this process cannot serve it."""
    platform, sharded = parse_spec(spec)
    if platform == "cpu" and sharded:
        ensure_host_devices()
    devices = platform_devices(platform)
    if not devices:
        raise DeviceUnavailable(
            f"device {spec!r} is not available on this host; available: "
            f"{', '.join(host_devices()) or 'none'}"
        )
    if sharded and len(devices) < 2:
        hint = (
            f" (the CPU backend started before {_HOST_FLAG} could be set: put it in XLA_FLAGS)"
            if platform == "cpu"
            else ""
        )
        raise DeviceUnavailable(
            f"device {spec!r} needs 2 or more {platform} devices, found 1{hint}"
        )
    return Placement(spec, tuple(devices), sharded)


def default_placement() -> Placement:
    """JAX's default device (:func:`default_platform`), unsharded: where a device is not
    chosen, every command and function measures there."""
    return resolve(default_platform())


def use_device(placement: Placement) -> None:
    """Make ``placement``'s device JAX's default: a target's factory places its arrays there
    itself (a target is measured unsharded: NotImplementedError for a sharded one)."""
    import jax

    if placement.sharded:
        raise NotImplementedError(
            f"a target is measured unsharded; {placement.spec!r} does not apply"
        )
    # The platform's name, not its Device: absl's flags (jax.config.parse_flags_with_absl,
    # as flax's examples call it) take only strings, and refuse a Device at import.
    jax.config.update("jax_default_device", placement.devices[0].platform)


def host_devices() -> list[str]:
    """The specs this host can serve, decided without starting any JAX backend.

    The CPU always qualifies, sharded too (host devices are forced per
    process); a GPU or TPU when its JAX plugin is installed. Whether an
    accelerator host has the two devices a sharded spec needs shows when a
    process resolves it.
    """
    return [spec for spec in DEVICE_SPECS if plugin_installed(parse_spec(spec)[0])]
