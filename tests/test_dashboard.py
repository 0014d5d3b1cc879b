"""The published asv dashboard, opened in headless Chromium, shows what asv measured.

The unit tests check results files; only a browser shows that ``asv publish``
output for this suite actually draws: its scripts run without errors, the
graph page fetches the benchmark's data, and the plotted point is the value
stored in the results. A screenshot lands in test-artifacts/dashboard.png.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from dashboard_helpers import (
    ASV_WWW_LIBS,
    ASV_WWW_NPM_COMMAND,
    BENCHMARK,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    drop_cdnjs_integrity,
    first_measurement,
    local_copy,
    missing_www_libs,
    pretty_seconds,
    publish_quick_results,
    serve,
)

SCREENSHOT = ROOT / "test-artifacts" / "dashboard.png"
# flot's own API: where the first point of the first series is drawn, in page pixels.
_POINT_JS = """() => {
    const graph = $('#main-graph');
    const plot = graph.data('plot');
    const point = plot.getData()[0].data[0];
    const offset = plot.pointOffset({x: point[0], y: point[1]});
    const box = graph[0].getBoundingClientRect();
    return [box.left + offset.left, box.top + offset.top];
}"""


def _require_browser() -> None:
    """Skip, saying what to install, when Chromium, Playwright or asv's scripts are missing."""
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"headless Chromium not found at {CHROMIUM}: apt-get install chromium")
    pytest.importorskip("playwright.sync_api", reason="Playwright missing: pip install playwright")
    missing = missing_www_libs()
    if missing:
        pytest.skip(
            f"asv's dashboard scripts {', '.join(missing)} not under {ASV_WWW_LIBS} "
            f"(set JITBENCH_ASV_WWW_LIBS, or run: {ASV_WWW_NPM_COMMAND})"
        )


@pytest.mark.slow
def test_dashboard_graph_shows_measured_value(tmp_path: Path) -> None:
    """Open the benchmark's graph page and find the stored measurement on screen."""
    _require_browser()
    from playwright.sync_api import Request, Response, Route, sync_playwright

    results, html, head = publish_quick_results(tmp_path)
    params, index, seconds = first_measurement(results)
    shown, unit_name = pretty_seconds(seconds)

    errors: list[str] = []
    unanswered: list[str] = []
    responses: list[Response] = []

    with serve(html) as base, sync_playwright() as playwright:

        def answer(route: Route, request: Request) -> None:
            """The loopback server for the dashboard's files, npm copies for CDN ones."""
            if request.url.startswith(base):
                if urlsplit(request.url).path in ("/", "/index.html"):
                    page_response = route.fetch()
                    route.fulfill(
                        response=page_response, body=drop_cdnjs_integrity(page_response.text())
                    )
                else:
                    route.continue_()
            elif (path := local_copy(request.url)) is not None:
                # The scripts are loaded with crossorigin="anonymous".
                route.fulfill(path=path, headers={"Access-Control-Allow-Origin": "*"})
            else:
                unanswered.append(request.url)
                route.abort()

        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            viewport={"width": 1280, "height": 800},
        )
        page = context.new_page()
        try:
            context.set_default_timeout(20_000)
            context.route("**/*", answer)
            page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
            page.on(
                "console",
                lambda message: (
                    errors.append(f"console {message.type}: {message.text}")
                    if message.type == "error"
                    else None
                ),
            )
            page.on("response", lambda response: responses.append(response))

            query = "&".join(f"p-{name}={quote(value, safe='')}" for name, value in params.items())
            graph_json = f"/{BENCHMARK}.json"
            with page.expect_response(
                lambda response: (
                    "/graphs/" in response.url
                    and "/graphs/summary/" not in response.url
                    and urlsplit(response.url).path.endswith(graph_json)
                )
            ) as graph_response:
                page.goto(f"{base}#{BENCHMARK}?{query}")
            page.wait_for_selector("#main-graph .flot-overlay")
            page.wait_for_selector("#main-graph .tickLabel")

            # The plot's data is the number asv stored, not a rounding of it.
            graph = graph_response.value
            assert graph.status == 200, graph.url
            revisions = graph.json()
            assert len(revisions) == 1, revisions
            assert revisions[0][1][index] == seconds, (params, revisions[0][1][index], seconds)

            assert BENCHMARK in page.inner_text("body")
            # The axis label is painted on the canvas; flot keeps its text in the axis options.
            y_label = page.evaluate(
                "() => $('#main-graph').data('plot').getAxes().yaxis.options.axisLabel"
            )
            assert y_label == unit_name, (y_label, unit_name)
            ticks = [
                float(tick)
                for tick in page.locator("#main-graph .yAxis .tickLabel").all_inner_texts()
            ]
            assert len(ticks) >= 2 and min(ticks) == 0.0, ticks

            # What a person sees hovering over the point: asv's own rendering of the value.
            x, y = page.evaluate(_POINT_JS)
            page.mouse.move(x, y)
            tooltip = page.locator(".tooltip-inner").first
            tooltip.wait_for()
            assert tooltip.inner_text() == f"{shown} @ {head[:8]}"
        except Exception as failure:
            failure.add_note(f"browser errors: {errors}\nunanswered requests: {unanswered}")
            raise
        finally:
            # Also on failure: the picture says what the page showed instead.
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))
            context.close()

    assert not errors, errors
    assert not unanswered, f"the dashboard asked for addresses nothing serves: {unanswered}"
    failed = [f"{r.status} {r.url}" for r in responses if r.status >= 400]
    assert not failed, failed
