"""``python -m jitbench``: the same as the ``jitbench`` command."""

import sys

from jitbench.cli import main

sys.exit(main())
