"""jitbench's asv suite: thin declarations over ``jitbench.measure.case``.

Importing the package imports JAX and the optional strategy packages once.
Under asv's ``forkserver`` launch method that happens in the server, and every
benchmark process is forked from it instead of importing JAX again. Nothing
here starts a JAX backend: each forked process sets up the devices its one
device spec needs (host devices for ``cpu-sharded``) before its backend
starts, and forking after a backend started would copy its threads' locks in
whatever state they were.
"""

import importlib.util

import jax  # noqa: F401  (imported once in the forkserver, see above)

from jitbench.devices import PLATFORMS, plugin_installed

for _optional in ("equinox", "flax.nnx", "flax.struct"):
    if importlib.util.find_spec(_optional.split(".")[0]) is not None:
        importlib.import_module(_optional)

# Decided once, in the server: which accelerator plugins are installed, so a
# benchmark process skips an absent GPU or TPU without starting any backend.
for _platform in PLATFORMS:
    plugin_installed(_platform)
