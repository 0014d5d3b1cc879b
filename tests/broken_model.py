"""A user's module that fails on import (for the target-loading tests)."""

raise RuntimeError("CUDA is not available\nsecond line")
