"""Device specs, placements and sharding, and what an absent device raises.

The test process has four host CPU devices (conftest). The absent-device tests
ask JAX itself what this host has, and skip where a test is about a device
being absent but the host has it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jitbench
from jitbench.devices import (
    DEVICE_SPECS,
    Placement,
    default_placement,
    default_platform,
    ensure_host_devices,
    host_devices,
    parse_spec,
    platform_devices,
    resolve,
    use_device,
)
from jitbench.strategies.codegen import Shape
from jitbench.ways.registry import get_strategy


def _jax_has(platform: str) -> bool:
    try:
        return bool(jax.devices(platform))
    except RuntimeError:
        return False


ACCELERATORS = [p for p in ("gpu", "tpu") if _jax_has(p)]
CPU_ONLY = not ACCELERATORS


def test_device_specs():
    assert DEVICE_SPECS == ("cpu", "cpu-sharded", "gpu", "gpu-sharded", "tpu", "tpu-sharded")


def test_parse_known_and_unknown_specs():
    assert parse_spec("cpu") == ("cpu", False)
    assert parse_spec("cpu-sharded") == ("cpu", True)
    assert parse_spec("gpu-sharded") == ("gpu", True)
    with pytest.raises(
        jitbench.JitbenchError,
        match=r"^unknown device 'xpu'; valid: cpu, cpu-sharded, gpu, gpu-sharded, tpu, "
        r"tpu-sharded$",
    ):
        parse_spec("xpu")


def test_host_devices_are_what_jax_has():
    specs = host_devices()
    assert specs[:2] == ["cpu", "cpu-sharded"]
    for platform in ACCELERATORS:
        assert platform in specs
    if CPU_ONLY:
        assert specs == ["cpu", "cpu-sharded"]


def test_this_process_has_four_cpu_devices():
    assert len(jax.devices("cpu")) == 4
    cpu, sharded = resolve("cpu"), resolve("cpu-sharded")
    assert cpu == Placement("cpu", tuple(jax.devices("cpu")), sharded=False)
    assert (cpu.n_devices, sharded.n_devices) == (1, 4)
    assert sharded.devices == tuple(jax.devices("cpu")) and sharded.sharded


@pytest.mark.parametrize("spec", ["gpu", "gpu-sharded", "tpu", "tpu-sharded"])
def test_absent_device_is_a_not_implemented_error(spec):
    platform = parse_spec(spec)[0]
    if _jax_has(platform):
        pytest.skip(f"this host has a {platform}: the test is about its absence")
    message = f"^device '{spec}' is not available on this host; available: cpu, cpu-sharded"
    with pytest.raises(jitbench.DeviceUnavailable, match=message):
        resolve(spec)
    assert platform_devices(platform) == []
    assert issubclass(jitbench.DeviceUnavailable, NotImplementedError)


@pytest.mark.parametrize(("size", "rounded"), [(1, 4), (4, 4), (10, 12), (13, 16)])
def test_sharded_size_is_rounded_up(size, rounded):
    assert resolve("cpu-sharded").round_size(size) == rounded
    assert resolve("cpu").round_size(size) == size


def test_sharded_instance_is_split_over_all_devices():
    obj, y = jitbench.make_instance(get_strategy("pytree_class"), 10, resolve("cpu-sharded"))
    assert y.shape == (12,) and obj.a0.shape == (12,)
    assert obj.a0.sharding.device_set == set(jax.devices("cpu"))
    assert [s.data.shape for s in obj.a0.addressable_shards] == [(3,)] * 4
    result = obj.calc(y)
    assert result.sharding.device_set == set(jax.devices("cpu"))


def test_unsharded_lives_on_one_device():
    obj, y = jitbench.make_instance(get_strategy("pytree_class"), 10, resolve("cpu"))
    assert y.shape == (10,)
    assert obj.a0.sharding.device_set == {jax.devices("cpu")[0]}
    assert obj.calc(y).sharding.device_set == {jax.devices("cpu")[0]}


def test_every_array_field_shares_the_placement():
    shape = Shape(n_arrays=3)
    strategy, placement = get_strategy("helper_function"), resolve("cpu-sharded")
    obj, _ = jitbench.make_instance(strategy, 8, placement, shape)
    for name in shape.array_fields:
        assert len(getattr(obj, name).sharding.device_set) == 4


def test_two_dimensional_arrays_shard_along_last_axis():
    arr = resolve("cpu-sharded").put(np.ones((2, 8), np.float32))
    assert [s.data.shape for s in arr.addressable_shards] == [(2, 2)] * 4
    one = resolve("cpu").put(np.ones((2, 8), np.float32))
    assert [s.data.shape for s in one.addressable_shards] == [(2, 8)]


def test_ensure_host_devices_appends_and_respects_user(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    ensure_host_devices(4)
    assert os.environ["XLA_FLAGS"] == (
        "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=4"
    )
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    ensure_host_devices(4)
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2"
    monkeypatch.delenv("XLA_FLAGS")
    ensure_host_devices(3)
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=3"


@pytest.mark.skipif(not CPU_ONLY, reason="this host has an accelerator: nothing is absent")
def test_asking_for_an_absent_gpu_starts_no_backend():
    # asv asks about absent devices in every skipped process; that must stay cheap.
    code = (
        "import sys\n"
        "import jitbench.devices as d\n"
        "print(d.platform_devices('gpu'), d.platform_devices('tpu'), d.host_devices())\n"
        "try:\n"
        "    d.resolve('gpu')\n"
        "except d.DeviceUnavailable as exc:\n"
        "    print(exc)\n"
        "print('jax' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "[] [] ['cpu', 'cpu-sharded']",
        "device 'gpu' is not available on this host; available: cpu, cpu-sharded",
        "False",
    ]


def test_jax_platforms_hides_a_platform(monkeypatch):
    from jitbench import devices

    devices.plugin_installed.cache_clear()
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    try:
        assert not devices.plugin_installed("gpu") and not devices.plugin_installed("tpu")
        assert devices.plugin_installed("cpu")
        assert host_devices() == ["cpu", "cpu-sharded"]
    finally:
        devices.plugin_installed.cache_clear()


def test_default_platform_follows_jax_default_device():
    # A platform's name (as use_device sets it), a Device, or nothing (JAX's first device).
    cpu = jax.devices("cpu")[0]
    for chosen in ("cpu", cpu, None):
        with jax.default_device(chosen):
            assert default_platform() == "cpu"


def test_default_placement_is_jax_default_device_unsharded():
    # Every command's and function's device where none is chosen.
    found = default_placement()
    assert (found.spec, found.sharded, found.devices) == (
        default_platform(),
        False,
        tuple(platform_devices(default_platform())),
    )


def test_use_device_sets_jax_default_and_refuses_a_sharded_placement():
    sharded = resolve("cpu-sharded")
    with pytest.raises(NotImplementedError, match="a target is measured unsharded; 'cpu-sharded'"):
        use_device(sharded)
    old = jax.config.jax_default_device
    try:
        use_device(resolve("cpu"))
        assert jax.config.jax_default_device == "cpu"
        assert jax.numpy.ones(1).devices() == {jax.devices("cpu")[0]}
    finally:
        jax.config.update("jax_default_device", old)
