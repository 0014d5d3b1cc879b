"""The steady-state call of an instance whose program is already compiled."""

from jitbench.suite import Case

from .common import ManyCalls


class CachedCall(ManyCalls):
    """Many calls per sample; the first call of the body builds and compiles.

    ``time_cached_call`` waits for the result; ``time_cached_call_dispatch``
    does not, and so measures the Python and C++ dispatch path alone (at large
    sizes the device queue fills and it approaches the compute time).
    """

    def time_cached_call(self, strategy, size, device):
        self.cached(lambda: Case.of(strategy, size, device)).call()

    def time_cached_call_dispatch(self, strategy, size, device):
        self.cached(lambda: Case.of(strategy, size, device)).dispatch()
