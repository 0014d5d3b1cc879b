"""Test-wide setup: four host CPU devices, so the cpu-sharded rows run everywhere."""

from jitbench.devices import ensure_host_devices

# Must happen before any test starts JAX's CPU backend.
ensure_host_devices()
