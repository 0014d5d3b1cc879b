"""Test-wide setup: four host CPU devices, and the real asv results shared by the report tests."""

import pytest

from jitbench.devices import ensure_host_devices

# Must happen before any test starts JAX's CPU backend.
ensure_host_devices()


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    """Real asv runs of tests/asv_project, built once for every test that reads results."""
    from test_results import asv_runs

    return asv_runs(tmp_path_factory)


@pytest.fixture(scope="session")
def frame(runs):
    from jitbench import results

    return results.load(runs.results)
