"""The published asv dashboard works offline, shows what asv measured, and links the report.

Unit tests check ``jitbench.dashboard``'s rewriting of asv's page without a
browser. The browser test publishes real asv results the way ``nox -s
publish`` does and opens them in headless Chromium with every request that is
not for the loopback server aborted: the page's scripts must all come from
``html/vendor/``, run without errors, draw the stored value with its unit,
offer the JAX releases of the results as a selector, and link to the jitbench
report and back. A screenshot lands in test-artifacts/dashboard.png.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

import asv
import pytest
from dashboard_helpers import (
    BENCHMARK,
    CHROMIUM,
    CHROMIUM_ARGS,
    JAX_MEASURED,
    JAX_OTHER,
    OTHER_FACTOR,
    ROOT,
    first_measurement,
    pretty_seconds,
    publish_quick_results,
    serve,
)

from jitbench import dashboard

SCREENSHOT = ROOT / "test-artifacts" / "dashboard.png"
ASV_WWW = Path(asv.__file__).parent / "www"
REPORT_URL = f"{dashboard.REPORT_DIR}/index.html"

# flot's own API: the series drawn for one JAX release, and where its first point is.
_SERIES_JS = """() => $('#main-graph').data('plot').getData().map(s => [s.label, s.data[0]])"""
_POINT_JS = """(label) => {
    const graph = $('#main-graph');
    const plot = graph.data('plot');
    const point = plot.getData().find(s => s.label === label).data[0];
    const offset = plot.pointOffset({x: point[0], y: point[1]});
    const box = graph[0].getBoundingClientRect();
    return [box.left + offset.left, box.top + offset.top];
}"""
# A plot of ``values`` drawn as asv 0.6.6's graphdisplay.js draws a count: its y axis
# labelled with the unit, formatted with toPrecision(3), spanning the data.
_COUNT_AXIS_JS = """(values) => {
    const div = $('<div style="width:600px;height:400px">').appendTo('body');
    const plot = $.plot(div, [values.map((v, i) => [i, v])], {yaxis: {
        axisLabel: 'instructions', tickFormatter: (v, axis) => (v / 1.0).toPrecision(3),
        min: Math.min(...values), max: Math.max(...values)}});
    const axis = plot.getAxes().yaxis;
    const shown = {labels: axis.ticks.map(t => t.label), values: axis.ticks.map(t => t.v),
                   step: axis.tickSize, range: [axis.min, axis.max]};
    plot.shutdown();
    div.remove();
    return shown;
}"""
_SERIES_COUNT_JS = """(n) => {
    const plot = $('#main-graph').data('plot');
    return plot !== undefined && plot.getData().length === n;
}"""


def _count(label: str) -> float:
    """A count's tick label as a number: 3.82M, 54.4k, 4."""
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(label[-1:], 1.0)
    return float(label.rstrip("kMG")) * scale


def _sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def _asv_site(folder: Path) -> Path:
    """asv 0.6.6's page files as ``asv publish`` copies them, and a stand-in report."""
    html = folder / "html"
    shutil.copytree(ASV_WWW, html)
    (html / "report").mkdir()
    (html / "report" / "index.html").write_text(
        "<!DOCTYPE html>\n<html><head><title>jitbench report</title></head><body>\n"
        "<h1>jitbench report</h1>\n</body></html>\n"
    )
    return html


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jitbench.dashboard", *args], capture_output=True, text=True
    )


def test_asv_page_loads_vendored_files_with_their_integrity(tmp_path: Path) -> None:
    html = _asv_site(tmp_path)
    original = (html / "index.html").read_text()
    assert "https://" in original
    done = _cli(str(html))
    assert done.returncode == 0, done.stderr

    page = (html / "index.html").read_text()
    tags = re.findall(r"<(?:script|link)\b[^>]*>", page)
    loaded = [re.search(r'(?:src|href)="([^"]*)"', t) for t in tags]
    assert not [t for t in tags if "//" in t], "external references left"
    served = [(t, m[1]) for t, m in zip(tags, loaded, strict=True) if m and "vendor/" in m[1]]
    assert len(served) == len(dashboard.ASSETS) == 10
    for tag, src in served:
        data = (html / src).read_bytes()
        (value,) = re.findall(r'integrity="([^"]*)"', tag)
        assert value == _sri(data), (src, value)
    # jitbench's axes script loads right after flot, with its integrity.
    lines = page.splitlines()
    (at,) = [i for i, line in enumerate(lines) if dashboard.AXES_FILE in line]
    assert "vendor/flot-0.8.3/jquery.flot.js" in lines[at - 1]
    axes = (html / dashboard.AXES_FILE).read_bytes()
    assert axes == dashboard.AXES_SOURCE.read_bytes()
    assert re.findall(r'integrity="([^"]*)"', lines[at]) == [_sri(axes)]
    del lines[at]
    # Nothing but those tags changed.
    assert len(lines) == len(original.splitlines())
    changed = [new for old, new in zip(original.splitlines(), lines, strict=True) if old != new]
    assert len(changed) == 10 and all("vendor/" in line for line in changed)
    # Every licence notice travels with the files.
    for package in {asset.path.split("/")[0] for asset in dashboard.ASSETS}:
        assert (html / "vendor" / package / "package.json").is_file()
    assert (html / "vendor" / "jquery-3.3.1" / "LICENSE.txt").is_file()
    assert (html / "vendor" / "bootstrap-3.1.1" / "dist" / "fonts").is_dir()

    # The report links back to the dashboard it sits in.
    report = (html / "report" / "index.html").read_text()
    assert report.count(dashboard.BACK_LINK_ID) == 1
    assert 'href="../index.html"' in report

    # A second run finds the work done and changes nothing.
    before = _snapshot(html)
    assert _cli(str(html)).returncode == 0
    assert _snapshot(html) == before


def test_another_axes_script_is_replaced_by_this_ones(tmp_path: Path) -> None:
    html = _asv_site(tmp_path)
    dashboard.publish(html)
    page = html / "index.html"
    old = page.read_text()
    page.write_text(
        old.replace(dashboard.integrity(dashboard.AXES_SOURCE.read_bytes()), "sha384-x")
    )
    dashboard.publish(html)
    assert page.read_text() == old


def test_vendored_files_are_the_bytes_the_cdns_serve_where_npm_has_them() -> None:
    """asv's own integrity values check five of the ten committed files."""
    files = dashboard.vendored_files()
    same = 0
    for asset in dashboard.ASSETS:
        algorithm = asset.cdn_integrity.split("-")[0]
        if dashboard.integrity(files[asset.path], algorithm) == asset.cdn_integrity:
            same += 1
        else:  # cdnjs minified these itself; npm ships the release's sources
            assert asset.path.startswith(("flot-0.8.3/", "stupid-table-plugin-")), asset
    assert same == 5


def test_unknown_external_script_fails_and_leaves_html_alone(tmp_path: Path) -> None:
    html = _asv_site(tmp_path)
    unknown = "https://cdn.example.org/plotly-2.0.0.min.js"
    page = html / "index.html"
    page.write_text(
        page.read_text().replace("</head>", f'<script src="{unknown}"></script></head>')
    )
    before = _snapshot(html)
    done = _cli(str(html))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and unknown in done.stderr, done.stderr
    assert _snapshot(html) == before


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: re.sub(r"\s*<script src=\"[^\"]*md5[^>]*></script>", "", p), "md5.min.js"),
        (lambda p: p.replace("sha256-FgpCb", "sha256-XXXXX"), "jquery-3.3.1.min.js"),
        (lambda p: p.replace('href="asv.css"', 'href="//fonts.example.org/a.css"'), "a.css"),
    ],
    ids=["known-file-missing", "other-integrity", "protocol-relative-stylesheet"],
)
def test_new_asv_page_shape_fails(tmp_path: Path, edit, message: str) -> None:
    html = _asv_site(tmp_path)
    page = html / "index.html"
    page.write_text(edit(page.read_text()))
    before = _snapshot(html)
    with pytest.raises(dashboard.DashboardError, match=re.escape(message)):
        dashboard.publish(html)
    assert _snapshot(html) == before


def test_a_missing_vendored_file_is_named(tmp_path: Path) -> None:
    source = tmp_path / "vendor"
    shutil.copytree(dashboard.VENDOR_SOURCE, source)
    (source / "jquery-3.3.1" / "dist" / "jquery.min.js").unlink()
    with pytest.raises(dashboard.DashboardError, match=r"missing: jquery-3\.3\.1/dist/jquery"):
        dashboard.vendored_files(source)


def test_report_must_be_there(tmp_path: Path) -> None:
    html = _asv_site(tmp_path)
    shutil.rmtree(html / "report")
    before = _snapshot(html)
    with pytest.raises(dashboard.DashboardError, match="project_url"):
        dashboard.publish(html)
    assert _snapshot(html) == before


def test_wheel_ships_the_vendored_files_and_the_axes_script() -> None:
    """setuptools packs only .py files unless package-data names the others."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = config["tool"]["setuptools"].get("package-data", {}).get("jitbench", [])
    assert "dashboard/vendor/**/*" in data and "dashboard/axes.js" in data, data


def _require_browser() -> None:
    """Skip, saying what to install, when Chromium or Playwright is missing."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"headless Chromium not found at {CHROMIUM}: apt-get install chromium")
    pytest.importorskip("playwright.sync_api", reason="Playwright missing: pip install playwright")


@pytest.mark.slow
def test_dashboard_offline_graph_jax_selector_and_report_link(tmp_path: Path) -> None:
    """Open the benchmark's graph page with no network and use it as a person would."""
    _require_browser()
    from playwright.sync_api import Request, Response, Route, sync_playwright

    published = publish_quick_results(tmp_path)
    assert published.project_url == REPORT_URL, (
        f"asv.conf.json's project_url is {published.project_url!r}; the dashboard's header "
        f"link opens the report copied beside it only with {REPORT_URL!r}"
    )
    params, index, seconds = first_measurement(published.results[JAX_MEASURED])
    shown, unit_name = pretty_seconds(seconds)
    releases = (JAX_MEASURED, JAX_OTHER)

    errors: list[str] = []
    blocked: list[str] = []
    responses: list[Response] = []

    with serve(published.html) as base, sync_playwright() as playwright:

        def only_loopback(route: Route, request: Request) -> None:
            """The loopback server answers; any other address is aborted and recorded."""
            if request.url.startswith(base):
                route.continue_()
            else:
                blocked.append(request.url)
                route.abort("internetdisconnected")

        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1280, "height": 800},
        )
        context.set_default_timeout(20_000)
        context.route("**/*", only_loopback)
        page = context.new_page()

        def watch(p) -> None:
            p.on("pageerror", lambda error: errors.append(f"{p.url}: page error: {error}"))
            p.on(
                "console",
                lambda message: (
                    errors.append(f"{p.url}: console {message.type}: {message.text}")
                    if message.type == "error"
                    else None
                ),
            )
            p.on("response", lambda response: responses.append(response))

        watch(page)
        context.on("page", watch)
        try:
            query = "&".join(f"p-{name}={quote(value, safe='')}" for name, value in params.items())
            page.goto(f"{base}#{BENCHMARK}?{query}")
            page.wait_for_selector("#main-graph .flot-overlay")
            page.wait_for_selector("#main-graph .tickLabel")
            assert "error.html" not in page.url
            assert BENCHMARK in page.inner_text("body")

            # The JAX releases of the results are a selector, and each is one line.
            jax_panel = page.locator("#graphdisplay-state-params .panel").filter(
                has=page.locator(".panel-heading", has_text=re.compile(r"^\s*jax\s*$"))
            )
            buttons = jax_panel.locator("a.btn")
            assert sorted(buttons.all_inner_texts()) == sorted(releases)
            assert buttons.evaluate_all("bs => bs.every(b => b.classList.contains('active'))")
            page.wait_for_function(_SERIES_COUNT_JS, arg=2)
            # asv labels a line with what differs between lines: "device-cpu; jax-0.10.2; ...".
            series = {
                release: (label, point)
                for label, point in page.evaluate(_SERIES_JS)
                for release in releases
                if f"jax-{release}" in label.split("; ")
            }
            assert sorted(series) == sorted(releases), series
            # The plot's data is the number asv stored, not a rounding of it.
            assert series[JAX_MEASURED][1][1] == seconds, (params, index, series)
            assert series[JAX_OTHER][1][1] == seconds * OTHER_FACTOR, series

            # The axis label is painted on the canvas; flot keeps its text in the axis options.
            y_label = page.evaluate(
                "() => $('#main-graph').data('plot').getAxes().yaxis.options.axisLabel"
            )
            assert y_label == unit_name, (y_label, unit_name)
            labels = page.locator("#main-graph .yAxis .tickLabel").all_inner_texts()
            ticks = [float(tick) for tick in labels]
            assert len(ticks) >= 2 and min(ticks) == 0.0, ticks
            assert len(set(labels)) == len(labels), labels
            # A count's axis in this page's flot, as asv sets it up (toPrecision(3), the
            # data's own range): 3.81e+6 on every tick without jitbench's axes script.
            for values in ([3.81e6, 3.8104e6, 3.8102e6], [3.81e6, 3.886e6], [4.0, 4.0]):
                axis = page.evaluate(_COUNT_AXIS_JS, values)
                read = [_count(label) for label in axis["labels"]]
                assert len(set(axis["labels"])) == len(read) >= 3, axis
                # Each tick reads as its value, to a tenth of the step between ticks.
                for label, value in zip(read, axis["values"], strict=True):
                    assert abs(label - value) <= axis["step"] / 10, (axis, label, value)
                # The axis spans 2% of the values at least: a wiggle within jitbench
                # compare's 1% stays in the middle half; a 2% step fills it.
                low, high = axis["range"]
                assert low <= min(values) and high >= max(values), axis
                assert high - low >= max(0.02 * max(values), max(values) - min(values)), axis

            # What a person sees hovering over the point: asv's own rendering of the value.
            x, y = page.evaluate(_POINT_JS, series[JAX_MEASURED][0])
            page.mouse.move(x, y)
            tooltip = page.locator(".tooltip-inner").first
            tooltip.wait_for()
            assert tooltip.inner_text() == f"{shown} @ {published.head[:8]}"
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))

            # Picking one release leaves its line alone on the graph.
            buttons.filter(has_text=JAX_OTHER).click()
            page.wait_for_function(_SERIES_COUNT_JS, arg=1)
            ((_, point),) = page.evaluate(_SERIES_JS)
            assert point[1] == seconds, point  # the measured release's line
            assert f"jax={quote(JAX_MEASURED)}" in urlsplit(page.url).fragment

            # The header link opens the jitbench report (in a new tab, as asv writes it),
            # and the report's first link returns to the dashboard.
            header = page.locator("#project-name")
            assert header.inner_text() == "jitbench"
            with context.expect_page() as opened:
                header.click()
            report = opened.value
            report.wait_for_load_state()
            assert report.url == base + REPORT_URL
            assert report.title() == "jitbench report"
            report.locator(f"#{dashboard.BACK_LINK_ID}").click()
            report.wait_for_url(base + "index.html")
            # asv sets the title once its index.json has loaded.
            report.wait_for_function(
                "() => document.title === 'airspeed velocity of an unladen jitbench'"
            )
        except Exception as failure:
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))  # what the page showed instead
            failure.add_note(f"browser errors: {errors}\nblocked requests: {blocked}")
            raise
        finally:
            context.close()

    assert not blocked, f"the dashboard asked for addresses outside 127.0.0.1: {blocked}"
    # The summary grid asks for a thumbnail of every benchmark of the suite; this
    # run measured one, so the others' thumbnails do not exist (nor should they).
    unmeasured = re.compile(r"/graphs/summary/(?!" + re.escape(BENCHMARK) + r"\.json).*\.json$")
    missing_thumbnails = [
        r for r in responses if r.status == 404 and unmeasured.search(urlsplit(r.url).path)
    ]  # asv adds ?timestamp=... to the address
    failed = [
        f"{r.status} {r.url}" for r in responses if r.status >= 400 and r not in missing_thumbnails
    ]
    assert not failed, failed
    # Chromium also logs each of those 404s on the console (without the address):
    # as many such lines as missing thumbnails are expected, any other error is not.
    not_found = [e for e in errors if "Failed to load resource" in e and "status of 404" in e]
    assert len(not_found) <= len(missing_thumbnails), (not_found, missing_thumbnails)
    other = [e for e in errors if e not in not_found]
    assert not other, other
