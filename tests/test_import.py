"""``import jitbench`` stays light: asv imports it in every benchmark process."""

from __future__ import annotations

import subprocess
import sys


def test_import_loads_no_heavy_module():
    code = (
        "import sys, jitbench\n"
        "heavy = ['pandas', 'matplotlib', 'equinox', 'flax', 'jax']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_strategies_command_imports_no_optional_package():
    code = (
        "import sys\n"
        "from jitbench.cli import main\n"
        "main(['strategies'])\n"
        "heavy = ['pandas', 'matplotlib', 'equinox', 'flax']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
