"""Peak memory of building an instance at the largest size and calling it once."""

from jitbench.suite import families

from .common import SIZES, PerDevice


class Memory(families.Memory, PerDevice):
    """Strategies that close over their arrays bake them into the program as constants."""

    size = max(SIZES)
