"""Test-wide setup: four host CPU devices, a bare environment for new processes, and the
real asv results shared by the report tests."""

import os
import re

import pytest

from jitbench.devices import ensure_host_devices

_HOST_FLAG = re.compile(r"\s*--xla_force_host_platform_device_count=\S+")

# Must happen before any test starts JAX's CPU backend: this process serves cpu-sharded.
ensure_host_devices()


def without_host_devices(environ) -> dict[str, str]:
    """``environ`` without the host-device flag conftest added (XLA_FLAGS dropped if empty)."""
    env = dict(environ)
    flags = _HOST_FLAG.sub("", env.pop("XLA_FLAGS", "")).strip()
    if flags:
        env["XLA_FLAGS"] = flags
    return env


@pytest.fixture
def bare_env():
    """This process's environment without the host-device flag conftest added.

    What an asv benchmark process starts with: nothing has asked for host devices yet,
    so the CPU has its default configuration unless the process resolves cpu-sharded.
    """
    return without_host_devices(os.environ)


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Real asv runs of tests/asv_project, built once for every test that reads results."""
    from test_results import asv_runs

    return asv_runs(tmp_path_factory)


@pytest.fixture(scope="session")
def frame(runs):
    from jitbench import results

    return results.load(runs.results)
