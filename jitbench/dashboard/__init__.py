"""Make ``asv publish``'s dashboard work offline (asv's CDN files served from ``vendor/``), its
graphs' y-axis ticks readable (``axes.js``), and link it with the jitbench report: ``python -m
jitbench.dashboard html`` (docs/running.md).

:data:`ASSETS`: each CDN address asv 0.6.6's page loads and the committed file under
``vendor/`` standing in for it, whose bytes git pins (which releases, and how to move to
others: vendor/README.md)."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

from jitbench.cli.arguments import Parser
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


# jitbench's own script for asv's graphs (readable y-axis ticks: axes.js), loaded after flot.
AXES_SOURCE = Path(__file__).resolve().parent / "axes.js"
AXES_FILE = "jitbench-axes.js"
FLOT = next(a for a in ASSETS if a.path.endswith("/jquery.flot.js"))


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


# Where the report is copied in the published site.
REPORT_DIR = "report"
BACK_LINK_ID = "jitbench-dashboard-link"
BACK_LINK = (
    f'<p><a id="{BACK_LINK_ID}" href="../index.html">&larr; asv dashboard of these results</a></p>'
)


@dataclass
class _Tag:
    name: str
    attrs: dict[str, str | None]
    start: int  # offset of "<" in the page
    text: str  # the start tag as written


class _Tags(HTMLParser):
    """The start tags of a page with their offsets, for rewriting in place."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[_Tag] = []
        self.inline: list[tuple[str, str]] = []  # (script or style, its text)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", page)]
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line, column = self.getpos()
        start = self._line_starts[line - 1] + column
        self.tags.append(_Tag(tag, dict(attrs), start, self.get_starttag_text() or ""))

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        if self.tags and self.tags[-1].name in ("script", "style"):
            self.inline.append((self.tags[-1].name, data))


def _is_external(url: str) -> bool:
    parts = urlsplit(url.strip())
    return bool(parts.netloc) or parts.scheme not in ("", "data")


_CSS_EXTERNAL = re.compile(r"""(?:@import\s*(?:url\()?|url\()\s*['"]?((?:https?:)?//[^'")\s]+)""")
_JS_EXTERNAL = re.compile(r"""https?://[^\s"'()<>\\]+""")


def _set_attribute(tag_text: str, name: str, value: str) -> str:
    """``tag_text`` with attribute ``name`` set to ``value`` (added before ``>`` if absent)."""
    pattern = re.compile(rf"""(\s{name}\s*=\s*)(?:"[^"]*"|'[^']*'|[^\s>]+)""", re.IGNORECASE)
    quoted = '"' + html.escape(value, quote=True) + '"'
    if pattern.search(tag_text):
        return pattern.sub(lambda m: m[1] + quoted, tag_text, count=1)
    end = -2 if tag_text.endswith("/>") else -1
    return f"{tag_text[:end]} {name}={quoted}{tag_text[end:]}"


def _asv_files(html_dir: Path, suffix: str) -> list[Path]:
    """asv's own files of one kind: everything but the vendored files and the report copy."""
    skip = {html_dir / VENDOR_DIR, html_dir / REPORT_DIR}
    return sorted(
        p for p in html_dir.rglob(f"*{suffix}") if p.is_file() and not (set(p.parents) & skip)
    )


def rewrite_page(page: str, name: str, files: dict[str, bytes]) -> tuple[str, set[Asset]]:
    """``page`` loading every known CDN file from ``vendor/``, and the assets it referenced;
    DashboardError names the first unknown external reference or unexpected integrity."""
    by_url = {a.url: a for a in ASSETS}
    by_local = {local_path(a): a for a in ASSETS}
    seen: set[Asset] = set()
    edits: list[tuple[_Tag, str]] = []
    parsed = _Tags(page)
    for tag in parsed.tags:
        attribute = "href" if tag.name == "link" else "src" if "src" in tag.attrs else None
        if tag.name in ("a", "area", "base", "form") or attribute is None:
            continue  # links a person follows, not files the page loads
        url = (tag.attrs.get(attribute) or "").strip()
        if url in by_local:  # already vendored by an earlier run
            asset = by_local[url]
            expected = integrity(files[asset.path])
            if tag.attrs.get("integrity") != expected:
                raise DashboardError(
                    f"{name}: {url} has integrity {tag.attrs.get('integrity')!r}, "
                    f"the vendored file's is {expected}"
                )
            seen.add(asset)
        elif url in by_url:
            asset = by_url[url]
            if tag.attrs.get("integrity") != asset.cdn_integrity:
                raise DashboardError(
                    f"{name}: <{tag.name}> {url} has integrity {tag.attrs.get('integrity')!r}, "
                    f"asv 0.6.6 gives {asset.cdn_integrity}: a new asv page, check it"
                )
            text = _set_attribute(tag.text, attribute, local_path(asset))
            text = _set_attribute(text, "integrity", integrity(files[asset.path]))
            edits.append((tag, text))
            seen.add(asset)
        elif _is_external(url):
            raise DashboardError(
                f"{name}: <{tag.name}> loads {url}, an external file jitbench does not vendor"
            )
    # What scripts and styles written into the page itself load.
    for kind, text in parsed.inline + [("style", t.attrs.get("style") or "") for t in parsed.tags]:
        if kind == "style" and (match := _CSS_EXTERNAL.search(text)):
            raise DashboardError(f"{name}: a style loads {match[1]}, an external file")
        if kind == "script" and (match := _JS_EXTERNAL.search(text)):
            raise DashboardError(f"{name}: an inline script names {match[0]}, an external address")
    for tag, text in sorted(edits, key=lambda e: e[0].start, reverse=True):
        assert page[tag.start : tag.start + len(tag.text)] == tag.text, tag
        page = page[: tag.start] + text + page[tag.start + len(tag.text) :]
    return page, seen


def load_axes(page: str, axes: bytes) -> str:
    """``page`` loading jitbench's axes script ``axes`` on the line after flot's (a page that
    loads flot only); where it does already, with ``axes``' integrity (another jitbench's
    script is replaced with this one's)."""
    tags = _Tags(page).tags
    expected = integrity(axes)
    for tag in tags:
        if tag.name == "script" and (tag.attrs.get("src") or "").strip() == AXES_FILE:
            text = _set_attribute(tag.text, "integrity", expected)
            return page[: tag.start] + text + page[tag.start + len(tag.text) :]
    flot = local_path(FLOT)
    after = next(
        (t for t in tags if t.name == "script" and (t.attrs.get("src") or "").strip() == flot),
        None,
    )
    if after is None:
        return page
    end = page.find("\n", page.find("</script>", after.start)) + 1
    indent = page[page.rfind("\n", 0, after.start) + 1 : after.start]
    line = f'{indent}<script src="{AXES_FILE}" integrity="{expected}"></script>\n'
    return page[:end] + line + page[end:]


def vendor(html_dir: Path, files: dict[str, bytes]) -> dict[Path, str]:
    """The new text of every asv page under ``html_dir`` loading ``files`` (vendored_files());
    checks everything, writes nothing."""
    pages = _asv_files(html_dir, ".html")
    if html_dir / "index.html" not in pages:
        raise DashboardError(f"{html_dir / 'index.html'} missing: run asv publish first")
    for path in _asv_files(html_dir, ".css"):
        if match := _CSS_EXTERNAL.search(path.read_text(encoding="utf-8")):
            raise DashboardError(f"{path}: loads {match[1]}, an external file")
    for path in _asv_files(html_dir, ".js"):
        if match := _JS_EXTERNAL.search(path.read_text(encoding="utf-8")):
            raise DashboardError(f"{path}: names {match[0]}, an external address")
    rewritten, seen = {}, set()
    axes = AXES_SOURCE.read_bytes()
    for path in pages:
        text, found = rewrite_page(path.read_text(encoding="utf-8"), str(path), files)
        rewritten[path] = load_axes(text, axes)
        seen |= found
    missing = [a.url for a in ASSETS if a not in seen]
    if missing:
        raise DashboardError(
            f"{html_dir}: asv's pages no longer load {', '.join(missing)}: a new asv page, check it"
        )
    vendor_dir = html_dir / VENDOR_DIR  # rglob finds nothing where it does not exist yet
    unknown = [
        str(p.relative_to(vendor_dir))
        for p in vendor_dir.rglob("*")
        if p.is_file() and p.relative_to(vendor_dir).as_posix() not in files
    ]
    if unknown:
        raise DashboardError(f"{vendor_dir} holds files jitbench did not put there: {unknown}")
    return rewritten


def link_report(report_page: Path) -> str:
    """The report page's text with a link back to the dashboard at the top of its body."""
    if not report_page.is_file():
        raise DashboardError(
            f"{report_page} missing: the dashboard's header link (project_url) opens it; "
            "copy jitbench report's folder there first"
        )
    text = report_page.read_text(encoding="utf-8")
    if f'id="{BACK_LINK_ID}"' in text:
        return text
    body = re.search(r"<body\b[^>]*>\n?", text, re.IGNORECASE)
    if body is None:
        raise DashboardError(f"{report_page} has no <body> tag to put the dashboard link in")
    return text[: body.end()] + BACK_LINK + "\n" + text[body.end() :]


def publish(html_dir: Path) -> list[Path]:
    """Vendor asv's CDN files into ``html_dir`` and link the report; the files written."""
    html_dir = Path(html_dir)
    files = vendored_files()
    pages = vendor(html_dir, files)
    report_page = html_dir / REPORT_DIR / "index.html"
    report = link_report(report_page)
    written = []
    for relative, data in files.items():
        target = html_dir / VENDOR_DIR / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(target)
    (html_dir / AXES_FILE).write_bytes(AXES_SOURCE.read_bytes())
    written.append(html_dir / AXES_FILE)
    for path, text in [*pages.items(), (report_page, report)]:
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = Parser(
        prog="python -m jitbench.dashboard",
        description="Make asv publish's html/ work offline and link it with the jitbench report.",
    )
    parser.add_argument("html_dir", type=Path, help="asv's html_dir, after publish")
    args = parser.parse_args(argv)
    try:
        written = publish(args.html_dir)
        print(
            f"{args.html_dir}: {len(ASSETS)} CDN files served from {VENDOR_DIR}/, "
            f"report linked back ({len(written)} files written)"
        )
    except DashboardError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0
