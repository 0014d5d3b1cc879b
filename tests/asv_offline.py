"""An asv environment plugin for tests: asv's virtualenv environment, made without the network.

asv's ``virtualenv`` environment pip-installs wheel, build, asv_runner, pympler and the
matrix's requirements from the package index. This one (``"environment_type":
"offline-virtualenv"``, loaded by ``"plugins": [".asv_offline"]`` in asv.conf.json with this
folder on asv's path) creates the environment with ``python -m venv --without-pip`` and a
``.pth`` file that adds the site-packages of the Python running asv after the environment's
own: pip, JAX, asv_runner, pympler and jitbench's dependencies are there, at the releases
the matrix pins (checked, else asv reports the environment unavailable), and pip sees them
as installed (it installs into the environment, and uninstalls nothing outside it).
Nothing is installed. The rest is asv's: the environment's info file, each commit's
checkout, build, install and uninstall by asv.conf.json's commands.
"""

from __future__ import annotations

import importlib.metadata
import os
import site
import sys

from asv import environment, util
from asv.plugins.virtualenv import Virtualenv


class OfflineVirtualenv(Virtualenv):
    tool_name = "offline-virtualenv"

    def __init__(self, conf, python, requirements, tagged_env_vars):
        super().__init__(conf, python, requirements, tagged_env_vars)
        self._executable = sys.executable  # the Python whose site-packages the env sees
        running = f"{sys.version_info.major}.{sys.version_info.minor}"
        if python != running:
            raise environment.EnvironmentUnavailable(f"{self.tool_name} has Python {running} only")
        for name, wanted in {**self._requirements, **self._base_requirements}.items():
            name = name.removeprefix("pip+")
            try:
                found = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                found = None
            if found is None or (wanted and found != wanted):
                raise environment.EnvironmentUnavailable(
                    f"{self.tool_name}: {name} {wanted or '(any)'} is not installed beside asv "
                    f"({found or 'absent'}), and this environment installs nothing"
                )

    def _setup(self):
        util.check_call([self._executable, "-m", "venv", "--without-pip", self._path])
        python = os.path.join(self._path, "bin", "python")
        purelib = util.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]
        ).strip()
        outer = [p for p in site.getsitepackages() if os.path.isdir(p)]
        with open(os.path.join(purelib, "outer-site-packages.pth"), "w") as pth:
            pth.write(f"import site; [site.addsitedir(p) for p in {outer!r}]\n")
        # pip too is the one beside asv; asv looks for the environment's pip script.
        script = os.path.join(self._path, "bin", "pip")
        with open(script, "w") as launcher:
            launcher.write(f"#!{python}\nimport sys\nfrom pip._internal.cli.main import main\n")
            launcher.write("sys.exit(main())\n")
        os.chmod(script, 0o755)
