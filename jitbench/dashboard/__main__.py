"""``python -m jitbench.dashboard html``: see :func:`jitbench.dashboard.main`."""

import sys

from jitbench.dashboard import main

sys.exit(main())
