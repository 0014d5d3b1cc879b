"""Device specs, sharding and the skip exception."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import numpy as np
import pytest

import jitbench
from jitbench.devices import DEVICE_SPECS, ensure_host_devices, parse_spec, resolve


def test_parse_known_and_unknown_specs():
    assert parse_spec("cpu") == ("cpu", False)
    assert parse_spec("gpu-sharded") == ("gpu", True)
    with pytest.raises(jitbench.JitbenchError, match="unknown device 'xpu'; valid: cpu, "):
        parse_spec("xpu")


def test_this_host_has_cpu_with_four_devices():
    assert jitbench.available_devices() == ["cpu", "cpu-sharded"]
    assert len(jax.devices("cpu")) == 4


@pytest.mark.parametrize("spec", ["gpu", "gpu-sharded", "tpu", "tpu-sharded"])
def test_absent_device_is_a_not_implemented_error(spec):
    with pytest.raises(jitbench.DeviceUnavailable, match=f"device '{spec}' is not available"):
        resolve(spec)
    assert issubclass(jitbench.DeviceUnavailable, NotImplementedError)
    assert spec in DEVICE_SPECS


def test_sharded_size_is_rounded_up_and_split_over_all_devices():
    placement = resolve("cpu-sharded")
    assert placement.n_devices == 4
    assert placement.round_size(10) == 12
    obj, y = jitbench.make_instance("pytree_class", 10, device="cpu-sharded")
    assert y.shape == (12,) and obj.a0.shape == (12,)
    assert len(obj.a0.sharding.device_set) == 4
    assert obj.a0.addressable_shards[0].data.shape == (3,)
    result = obj.calc(y)
    assert len(result.sharding.device_set) == 4


def test_unsharded_lives_on_one_device():
    obj, y = jitbench.make_instance("pytree_class", 10, device="cpu")
    assert y.shape == (10,)
    assert obj.a0.sharding.device_set == {jax.devices("cpu")[0]}


def test_two_dimensional_arrays_shard_along_last_axis():
    placement = resolve("cpu-sharded")
    arr = placement.put(np.ones((2, 8), np.float32))
    assert arr.addressable_shards[0].data.shape == (2, 2)


def test_ensure_host_devices_appends_and_respects_user(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    ensure_host_devices(4)
    assert os.environ["XLA_FLAGS"] == (
        "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=4"
    )
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    ensure_host_devices(4)
    assert os.environ["XLA_FLAGS"] == "--xla_force_host_platform_device_count=2"


def test_gpu_check_does_not_start_a_backend():
    # asv asks about absent devices in every skipped process; that must stay cheap.
    code = (
        "import jitbench.devices as d\n"
        "assert d.platform_devices('gpu') == []\n"
        "import sys\n"
        "assert 'jax' not in sys.modules, 'jax imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
