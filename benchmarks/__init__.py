"""jitbench's asv suite: thin declarations over ``jitbench.suite``.

Importing the package prepares the process before any benchmark runs: the
CPU gets four host devices (appended to the user's ``XLA_FLAGS``; XLA reads
them when the backend starts), and JAX plus the optional strategy packages
are imported. Under asv's ``forkserver`` launch method that import happens
once, in the server, and every benchmark process is forked from it instead
of importing JAX again. Nothing here starts a JAX backend: forking after a
backend started would copy its threads' locks in whatever state they were.
"""

import importlib.util

from jitbench.devices import PLATFORMS, ensure_host_devices, plugin_installed

ensure_host_devices()

import jax  # noqa: E402, F401  (imported once in the forkserver, see above)

for _optional in ("equinox", "flax.nnx", "flax.struct"):
    if importlib.util.find_spec(_optional.split(".")[0]) is not None:
        importlib.import_module(_optional)

# Decided once, in the server: which accelerator plugins are installed, so a
# benchmark process skips an absent GPU or TPU without starting any backend.
for _platform in PLATFORMS:
    plugin_installed(_platform)
