"""Helpers for tests that drive headless Chromium (Playwright) through the app (launched with
attention_lab.testing.chromium's path and flags): waiting for a script run, failing on any
exception shown, and reading our canvas charts."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Locator, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from attention_lab.frame.streamlit_dom import inline, keyed, part

ROOT = Path(__file__).resolve().parents[2]


#: every page's link as a lecturer prepares it
PREPARED_LINKS = [
    "/",
    "/gpt?text=The%20with%20statement&layer=1&head=2",
    "/reversal?text=attention",
    "/compare?a=reverse-rope&b=reverse-none&text=attention",
    "/bert?text=The%20ret%5BMASK%5Drn%20statement&layer=1&head=2",
    "/heads?checkpoint=gpt-induction",
    "/basics",
    "/positions?d_model=64&length=50",
    "/variance",
    "/cost",
    "/train",
]


def wait_for_app(page: Page, timeout: float = 90_000) -> None:
    """Wait until the script run has finished: a title is shown and no run is in progress."""
    idle = inline("""() => {
        const main = document.querySelector(part("main"));
        if (!main || !main.querySelector('h1')) return false;
        const s = document.querySelector(part("status"));
        if (!s) return true;
        const t = s.innerText.toLowerCase();
        return !t.includes('stop') && !t.includes('running');
    }""")
    page.wait_for_function(idle, timeout=timeout)
    page.wait_for_timeout(700)  # a rerun may start right after (query params, fragments)
    page.wait_for_function(idle, timeout=timeout)


def assert_no_exception(page: Page) -> None:
    """Fail on any exception element or error box Streamlit shows on the page."""
    exceptions = page.locator(part("exception"))
    if exceptions.count():
        raise AssertionError(f"exception on page: {exceptions.first.inner_text()[:2000]}")


def open_page(page: Page, url: str, shot: Path | None = None) -> None:
    page.goto(url)
    wait_for_app(page)
    assert_no_exception(page)
    if shot is not None:
        page.screenshot(path=str(shot), full_page=True)


# ---------------------------------------------------------------- the canvas charts (app/static/charts.js)


def chart(page: Page, key: str) -> Locator:
    """The drawn chart mounted under widget key `key` (Playwright's CSS pierces its shadow root)."""
    found = page.locator(f"{keyed(key)} .lab-chart[data-drawn]")
    found.wait_for(timeout=30_000)
    return found


def chart_title(page: Page, key: str, has: str) -> None:
    """Wait (up to 20 s) until the chart's title holds `has`: a chart redraws just after the
    run that sent it, so the previous title can still be up when the run has finished."""
    expect(chart(page, key).locator("canvas")).to_have_attribute(
        "aria-label", re.compile(re.escape(has)), timeout=20_000
    )


def chart_legend(page: Page, key: str, entry: str) -> None:
    """Wait (up to 20 s) until the chart's legend lists `entry`."""
    expect(chart(page, key)).to_have_attribute(
        "data-legend", re.compile(re.escape(json.dumps(entry))), timeout=20_000
    )


def chart_cells(page: Page, key: str) -> list[list[int]]:
    """[layer, head, x, y, w, h] of every panel, in CSS pixels of the chart's canvas."""
    return json.loads(chart(page, key).get_attribute("data-cells") or "[]")


# ---------------------------------------------------------------- the URL and the view


URL_HAS = """(expected) => {
    const p = new URLSearchParams(window.location.search);
    return Object.entries(expected).every(([k, v]) => p.get(k) === v);
}"""


def params(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def settle(page: Page, expect: dict[str, str], shot: Path | None = None) -> None:
    """Wait for the rerun an action started: the page mirrors its state into the URL early
    in each run, so wait for the expected parameters, then for the run to finish; fail on
    any exception on the page."""
    try:
        page.wait_for_function(URL_HAS, arg=expect, timeout=30_000)
    except PlaywrightTimeout:
        raise AssertionError(f"the URL never held {expect}: {page.url}") from None
    wait_for_app(page)
    assert_no_exception(page)
    if shot is not None:
        page.screenshot(path=str(shot), full_page=True)


def chart_box(page: Page, key: str) -> dict[str, float]:
    """Where the chart drawn under widget key `key` lies on the page (before any scrolling)."""
    box = chart(page, key).bounding_box()
    assert box is not None
    return box


def on_screen(page: Page, key: str) -> bool:
    """The whole chart is inside the 1280x720 window without scrolling."""
    box = chart_box(page, key)
    return box["y"] >= 0 and box["y"] + box["height"] <= 720 and box["x"] + box["width"] <= 1280


def click_head(page: Page, chart_key: str, layer: int, head: int) -> None:
    """Click the middle of one head's panel of a clickable attention grid (where charts.js
    says it drew it) and wait for the rerun that selects it."""
    canvas = chart(page, chart_key).locator("canvas")
    canvas.scroll_into_view_if_needed()
    (x, y, w, h) = next(c[2:] for c in chart_cells(page, chart_key) if c[:2] == [layer, head])
    canvas.click(position={"x": x + w / 2, "y": y + h / 2})
    settle(page, {"layer": str(layer), "head": str(head)})
