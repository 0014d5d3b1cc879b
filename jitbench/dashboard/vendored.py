"""The JavaScript and CSS asv 0.6.6's dashboard loads from CDNs: each CDN address, the npm
release file standing in for it (two exceptions: stupidtable 1.1.3 stands in for 1.0.1, never
on npm, and flot comes unminified), its pinned sha256, and ``--refresh-vendor`` (README.md)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jitbench.errors import JitbenchError

VENDOR_SOURCE = Path(__file__).resolve().parent / "vendor"
# Where the files land in the published site.
VENDOR_DIR = "vendor"


class DashboardError(JitbenchError):
    """asv's pages or the vendored files are not what this module expects."""


@dataclass(frozen=True)
class Package:
    """One npm release: the tarball's sha512 (npm's dist.integrity) and the files kept."""

    name: str
    version: str
    licence: str
    tarball_integrity: str
    files: dict[str, str]  # path inside the package -> sha256 hex

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.version}"


@dataclass(frozen=True)
class Asset:
    """A CDN address asv's page loads, the integrity it gives, and the file standing in."""

    url: str
    cdn_integrity: str
    package: str
    path: str


PACKAGES = {
    p.name: p
    for p in [
        Package(
            "jquery",
            "3.3.1",
            "MIT",
            "sha512-Ubldcmxp5np52/ENotGxlLe6aGMvmF4R8S6tZjsP6Knsaxd/xp3Zrh50cG93lR6nPXyUFwzN3ZSOQI0wRJNdGg==",
            {
                "dist/jquery.min.js": (
                    "160a426ff2894252cd7cebbdd6d6b7da8fcd319c65b70468f10b6690c45d02ef"
                ),
                "LICENSE.txt": "2b3ed8ba424423a50b023e728530d94bc385cfc7c328ad65a3dfee9c7c0531c5",
                "package.json": "2b914e2ea558978f08ffe2c12d34c28a254607198a2c7a14eeb7c421f8b28248",
            },
        ),
        Package(
            "flot",
            "0.8.3",
            "MIT",
            "sha512-xg2otcTJDvS+ERK+my4wxG/ASq90QURXtoM4LhacCq0jQW2jbyjdttbRNqU2cPykrpMvJ6b2uSp6SAgYAzj9tQ==",
            {
                "jquery.flot.js": (
                    "b7b931f273c38b1277b9c6c1f4e05c4ec09885a487bddaf3279e2d7e49a38e12"
                ),
                "jquery.flot.time.js": (
                    "a582c832adc7138a6b05aaf61f16ebac274701f1be4afea77e739a1c34b9c41a"
                ),
                "jquery.flot.selection.js": (
                    "e6c85f6c1ebe4b4da29d8ae238c7c5060283f05f7ef054f6b91817d02c092918"
                ),
                "jquery.flot.categories.js": (
                    "6e81664b28ea795c734906f4aa15614640a75ac7fbd399a7fb9084040698351a"
                ),
                "LICENSE.txt": "dd32421fa4b2ecc3fa7c6d831d395fb02d9304583504639a32e1c18660cff33f",
                "package.json": "ccca18c6f696ed7889a7a8f8310103691d0555ee3eb84e2ea2c1bde19c817919",
            },
        ),
        Package(
            "flot-orderbars",
            "1.0.0",
            "MIT (notice in the file's header and package.json; no separate licence file)",
            "sha512-Jv51fvzevUjNXEeozpwEKfPjhiZhfiJddv0WHjduUTCmSF+7T5K7C9c9Y1wIVmUhDBv5fLMjgbwKecT0GIKPZA==",
            {
                "js/jquery.flot.orderBars.js": (
                    "39735b4f46f96ff4e082572401f47c55a2767b366fd1d1e821e44a8d830a12bf"
                ),
                "package.json": "07106f29be5a05aab6a3b3ae333b9e3b286cf59f00b23ae182de0d507ae3360b",
            },
        ),
        Package(
            "stupid-table-plugin",
            "1.1.3",
            "MIT",
            "sha512-2Vk7XouQPxUQPRe9w0Fu7ZZ8kHLK7rDoLMsCgtKxRNJ7f4dSOGvW9CkHsq5wD6QsaEnWoyLBYH3xOEsrK3yWBg==",
            {
                "stupidtable.min.js": (
                    "4642380f28ebe9ed7cac251793b281ef8620c4386205d92788f9b12f5cceb4e0"
                ),
                "LICENSE": "7b3e49bc9ec1e75ca93b8c1b04e5506516b90de37ce611a4aed3a74734892547",
                "package.json": "2b479bf6df49f59c47280bdb0e3458e54fc5ee5f0985dbe78c0dd2f696fd9904",
            },
        ),
        Package(
            "blueimp-md5",
            "2.19.0",
            "MIT",
            "sha512-DRQrD6gJyy8FbiE4s+bDoXS9hiW3Vbx5uCdwvcCf3zLHL+Iv7LtGHLpr+GZV8rHG8tK766FGYBwRbu8pELTt+w==",
            {
                "js/md5.min.js": "64d7ded388c562e4bde9e58ce205e5fa01b9734fcd434d496eb7b4fbfe9b927d",
                "LICENSE.txt": "ce2ef2581ac80c09ea7025ce0eca7995b1cdc631cd0daaffce3a1353bc2143f8",
                "package.json": "a2ab695b96f7dcf770f7f200afd1ee628ff8ec5f32168da3fc0656e5c9b56de1",
            },
        ),
        Package(
            "bootstrap",
            "3.1.1",
            "MIT",
            "sha512-TAzqS8E/ISpVHP29gYhy+1NSV+FJwApDVQhDfgLYsIuUDJiqJzH2DfORN5tiu+Ie2iBLrzEG34t4Rf465cigqg==",
            {
                "dist/js/bootstrap.min.js": (
                    "898d05a17f2cfc5120ddcdba47a885c378c0b466f30f0700e502757e24b403a1"
                ),
                "dist/css/bootstrap.min.css": (
                    "e9503448692b738dd260fbd7f7cabf2e11f09b600fa97e6eb3a56eba5b1a7e9b"
                ),
                # bootstrap.min.css names these relative to itself (../fonts/); asv's
                # pages draw no glyphicon, but the stylesheet should not point at nothing.
                "dist/fonts/glyphicons-halflings-regular.eot": (
                    "f495f34e4f177cf0115af995bbbfeb3fcabc88502876e76fc51a4ab439bc8431"
                ),
                "dist/fonts/glyphicons-halflings-regular.svg": (
                    "d168d50a88c730b4e6830dc0da2a2b51dae4658a77d9619943c27b8ecfc19d1a"
                ),
                "dist/fonts/glyphicons-halflings-regular.ttf": (
                    "bd18efd3efd70fec8ad09611a20cdbf99440b2c1d40085c29be036f891d65358"
                ),
                "dist/fonts/glyphicons-halflings-regular.woff": (
                    "fc969dc1c6ff531abcf368089dcbaf5775133b0626ff56b52301a059fc0f9e1e"
                ),
                "LICENSE": "103ffbd5456d39cd2ca1612f028219e6b7d367aca0b3efb21aacafb75deb6ff6",
                "package.json": "da694008140e3ed5f588f93e159636c3519da4968abb05279b0ee8cccced3393",
            },
        ),
    ]
}

_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs"
# Exactly the external references of asv 0.6.6's www/index.html, with its integrity values.
# jQuery, orderBars, md5 and both bootstrap files are the npm bytes the CDN serves (their
# cdn_integrity matches the vendored file); cdnjs minified flot and stupidtable itself.
ASSETS = (
    Asset(
        "https://code.jquery.com/jquery-3.3.1.min.js",
        "sha256-FgpCb/KJQlLNfOu91ta32o/NMZxltwRo8QtmkMRdAu8=",
        "jquery",
        "dist/jquery.min.js",
    ),
    Asset(
        f"{_CDNJS}/flot/0.8.3/jquery.flot.min.js",
        "sha512-eO1AKNIv7KSFl5n81oHCKnYLMi8UV4wWD1TcLYKNTssoECDuiGhoRsQkdiZkl8VUjoms2SeJY7zTSw5noGSqbQ==",
        "flot",
        "jquery.flot.js",
    ),
    Asset(
        f"{_CDNJS}/flot/0.8.3/jquery.flot.time.min.js",
        "sha512-lcRowrkiQvFli9HkuJ2Yr58iEwAtzhFNJ1Galsko4SJDhcZfUub8UxGlMQIsMvARiTqx2pm7g6COxJozihOixA==",
        "flot",
        "jquery.flot.time.js",
    ),
    Asset(
        f"{_CDNJS}/flot/0.8.3/jquery.flot.selection.min.js",
        "sha512-3EUG0t3qfbLaGN3FXO86i+57nvxHOXvIb/xMSKRrCuX/HXdn1bkbqwAeLd6U1PDmuEB2cnKhfM+SGLAVQbyjWQ==",
        "flot",
        "jquery.flot.selection.js",
    ),
    Asset(
        f"{_CDNJS}/flot/0.8.3/jquery.flot.categories.min.js",
        "sha512-x4QGSZkQ57pNuICMFFevIhDer5NVB5eJCRmENlCdJukMs8xWFH8OHfzWQVSkl9VQ4+4upPPTkHSAewR6KNMjGA==",
        "flot",
        "jquery.flot.categories.js",
    ),
    Asset(
        "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js",
        "sha256-OXNbT0b5b/TgglckAfR8VaJ2ezZv0dHoIeRKjYMKEr8=",
        "flot-orderbars",
        "js/jquery.flot.orderBars.js",
    ),
    Asset(
        f"{_CDNJS}/stupidtable/1.0.1/stupidtable.min.js",
        "sha512-GM3Ds3dUrgkpKVXc+4RxKbQDoeTemdlzXxn5d/QCOJT6EFdEufu1UTVBpIFDLd6YjIhSThNe+zpo1mwqzNq4GQ==",
        "stupid-table-plugin",
        "stupidtable.min.js",
    ),
    Asset(
        f"{_CDNJS}/blueimp-md5/2.19.0/js/md5.min.js",
        "sha512-8pbzenDolL1l5OPSsoURCx9TEdMFTaeFipASVrMYKhuYtly+k3tcsQYliOEKTmuB1t7yuzAiVo+yd7SJz+ijFQ==",
        "blueimp-md5",
        "js/md5.min.js",
    ),
    Asset(
        "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js",
        "sha256-iY0FoX8s/FEg3c26R6iFw3jAtGbzDwcA5QJ1fiS0A6E=",
        "bootstrap",
        "dist/js/bootstrap.min.js",
    ),
    Asset(
        "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css",
        "sha256-6VA0SGkrc43SYPvX98q/LhHwm2APqX5us6Vuulsafps=",
        "bootstrap",
        "dist/css/bootstrap.min.css",
    ),
)


def integrity(data: bytes, algorithm: str = "sha384") -> str:
    """The Subresource Integrity value of ``data``: ``sha384-<base64 digest>``."""
    return f"{algorithm}-{base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def local_path(asset: Asset) -> str:
    """Where ``asset`` is served from, relative to the dashboard's index.html."""
    return f"{VENDOR_DIR}/{PACKAGES[asset.package].folder}/{asset.path}"


def vendored_files(source: Path = VENDOR_SOURCE) -> dict[str, bytes]:
    """Every pinned file, keyed by its path under ``vendor/``, after checking its sha256."""
    files = {}
    for package in PACKAGES.values():
        for path, sha256 in package.files.items():
            where = source / package.folder / path
            try:
                data = where.read_bytes()
            except OSError as exc:
                raise DashboardError(f"vendored file {where} unreadable: {exc.strerror}") from None
            digest = hashlib.sha256(data).hexdigest()
            if digest != sha256:
                raise DashboardError(
                    f"vendored file {where} has sha256 {digest}, pinned {sha256}: "
                    "refresh it with python -m jitbench.dashboard --refresh-vendor"
                )
            files[f"{package.folder}/{path}"] = data
    return files


def refresh_vendor(target: Path = VENDOR_SOURCE) -> None:
    """Download the pinned npm releases again (``npm pack``) and rewrite ``target``; on any
    sha512 or sha256 mismatch nothing in ``target`` changes."""
    fresh: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="jitbench-vendor-") as tmp:
        for package in PACKAGES.values():
            spec = f"{package.name}@{package.version}"
            subprocess.run(
                ["npm", "pack", "--silent", "--pack-destination", tmp, spec],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            tarball = Path(tmp) / f"{package.name}-{package.version}.tgz"
            got = integrity(tarball.read_bytes(), "sha512")
            if got != package.tarball_integrity:
                raise DashboardError(f"{spec}: tarball {got}, pinned {package.tarball_integrity}")
            with tarfile.open(tarball) as archive:
                for path, sha256 in package.files.items():
                    member = archive.extractfile(f"package/{path}")
                    data = member.read() if member else b""
                    if hashlib.sha256(data).hexdigest() != sha256:
                        raise DashboardError(f"{spec}: {path} does not match its pinned sha256")
                    fresh[f"{package.folder}/{path}"] = data
    for relative, data in fresh.items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_bytes(data)
    for folder in {p.folder for p in PACKAGES.values()}:
        for path in (target / folder).rglob("*"):
            if path.is_file() and path.relative_to(target).as_posix() not in fresh:
                path.unlink()
