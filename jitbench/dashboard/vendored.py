"""The JavaScript and CSS asv 0.6.6's dashboard loads from CDNs: each CDN address and the
committed file under ``vendor/`` standing in for it, whose bytes git pins (which releases, and
how to move to others: vendor/README.md)."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from pathlib import Path

from jitbench.errors import JitbenchError

VENDOR_SOURCE = Path(__file__).resolve().parent / "vendor"
# Where the files land in the published site.
VENDOR_DIR = "vendor"


class DashboardError(JitbenchError):
    """asv's pages or the vendored files are not what this module expects."""


@dataclass(frozen=True)
class Asset:
    """A CDN address asv's page loads, the integrity it gives, and the file standing in
    (its path under ``vendor/``: the npm package's folder, then its path in the package)."""

    url: str
    cdn_integrity: str
    path: str


_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
# Exactly the external references of asv 0.6.6's www/index.html, with its integrity values
# (which vendored files are the CDN's own bytes: vendor/README.md).
ASSETS = (
    Asset(
        "https://code.jquery.com/jquery-3.3.1.min.js",
        "sha256-FgpCb/KJQlLNfOu91ta32o/NMZxltwRo8QtmkMRdAu8=",
        "jquery-3.3.1/dist/jquery.min.js",
    ),
    Asset(
        f"{_CDNJS}/flot/0.8.3/jquery.flot.min.js",
        "sha512-eO1AKNIv7KSFl5n81oHCKnYLMi8UV4wWD1TcLYKNTssoECDuiGhoRsQkdiZkl8VUjoms2SeJY7zTSw5noGSqbQ==",
        "flot-0.8.3/jquery.flot.js",
    ),
    Asset(
        f"{_CDNJS}/flot/0.8.3/jquery.flot.time.min.js",
        "sha512-lcRowrkiQvFli9HkuJ2Yr58iEwAtzhFNJ1Galsko4SJDhcZfUub8UxGlMQIsMvARiTqx2pm7g6COxJozihOixA==",
        "flot-0.8.3/jquery.flot.time.js",
    ),
    Asset(
        f"{_CDNJS}/flot/0.8.3/jquery.flot.selection.min.js",
        "sha512-3EUG0t3qfbLaGN3FXO86i+57nvxHOXvIb/xMSKRrCuX/HXdn1bkbqwAeLd6U1PDmuEB2cnKhfM+SGLAVQbyjWQ==",
        "flot-0.8.3/jquery.flot.selection.js",
    ),
    Asset(
        f"{_CDNJS}/flot/0.8.3/jquery.flot.categories.min.js",
        "sha512-x4QGSZkQ57pNuICMFFevIhDer5NVB5eJCRmENlCdJukMs8xWFH8OHfzWQVSkl9VQ4+4upPPTkHSAewR6KNMjGA==",
        "flot-0.8.3/jquery.flot.categories.js",
    ),
    Asset(
        "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js",
        "sha256-OXNbT0b5b/TgglckAfR8VaJ2ezZv0dHoIeRKjYMKEr8=",
        "flot-orderbars-1.0.0/js/jquery.flot.orderBars.js",
    ),
    Asset(
        f"{_CDNJS}/stupidtable/1.0.1/stupidtable.min.js",
        "sha512-GM3Ds3dUrgkpKVXc+4RxKbQDoeTemdlzXxn5d/QCOJT6EFdEufu1UTVBpIFDLd6YjIhSThNe+zpo1mwqzNq4GQ==",
        "stupid-table-plugin-1.1.3/stupidtable.min.js",
    ),
    Asset(
        f"{_CDNJS}/blueimp-md5/2.19.0/js/md5.min.js",
        "sha512-8pbzenDolL1l5OPSsoURCx9TEdMFTaeFipASVrMYKhuYtly+k3tcsQYliOEKTmuB1t7yuzAiVo+yd7SJz+ijFQ==",
        "blueimp-md5-2.19.0/js/md5.min.js",
    ),
    Asset(
        "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js",
        "sha256-iY0FoX8s/FEg3c26R6iFw3jAtGbzDwcA5QJ1fiS0A6E=",
        "bootstrap-3.1.1/dist/js/bootstrap.min.js",
    ),
    Asset(
        "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css",
        "sha256-6VA0SGkrc43SYPvX98q/LhHwm2APqX5us6Vuulsafps=",
        "bootstrap-3.1.1/dist/css/bootstrap.min.css",
    ),
)


def integrity(data: bytes, algorithm: str = "sha384") -> str:
    """The Subresource Integrity value of ``data``: ``sha384-<base64 digest>``."""
    return f"{algorithm}-{base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def local_path(asset: Asset) -> str:
    """Where ``asset`` is served from, relative to the dashboard's index.html."""
    return f"{VENDOR_DIR}/{asset.path}"


def vendored_files(source: Path = VENDOR_SOURCE) -> dict[str, bytes]:
    """Every file of the packages' folders, keyed by its path under ``vendor/``."""
    files = {
        p.relative_to(source).as_posix(): p.read_bytes()
        for p in sorted(source.glob("*/**/*"))
        if p.is_file()
    }
    if missing := [a.path for a in ASSETS if a.path not in files]:
        raise DashboardError(f"{source}: vendored files missing: {', '.join(missing)}")
    return files
