"""The built-in strategies' classes, as their users would write them: the recipes (plain JAX,
equinox and flax), the class factory (``codegen``), the one computation they all jit, their
instances on a device, the canary's calibrated work, and the hand-written twins. Which
strategies there are: :mod:`jitbench.ways.registry`. Never imports JAX; map: README.md.
"""
