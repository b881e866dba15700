""" "Download this view (HTML)" on the pages: the file holds the page's title, text, widget
values, tables and every chart it showed, and opens from file:// with the network off, every
chart drawn and axe finding nothing serious."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser

from tests.support.browser import assert_no_exception, open_page

LINKS = {
    "gpt": "/gpt?text=The%20with%20statement&layer=1&head=2",
    "reversal": "/reversal?text=attention",
    "basics": "/basics",
}


@pytest.mark.parametrize("page_name", list(LINKS))
def test_a_page_downloads_as_one_file_that_opens_offline(
    browser: Browser, app_url: str, tmp_path: Path, page_name: str
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, app_url + LINKS[page_name])
        charts = page.locator(".lab-chart").count()
        heading = page.locator('[data-testid="stMain"] h1').first.inner_text().strip()
        with page.expect_download() as download:
            page.get_by_role("button", name="Download this view (HTML)").click()
        assert download.value.suggested_filename == f"attention-lab-{page_name}.html"
        path = tmp_path / download.value.suggested_filename
        download.value.save_as(path)
        assert_no_exception(page)
        again = tmp_path / "again.html"  # a second download in the tab needs no round trip
        with page.expect_download() as second:
            page.get_by_role("button", name="Download this view (HTML)").click()
        second.value.save_as(again)
    finally:
        context.close()
    assert charts >= 2 and again.stat().st_size > 50_000

    offline = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
    view = offline.new_page()
    errors: list[str] = []
    view.on("pageerror", lambda e: errors.append(str(e)))
    try:
        view.goto(path.as_uri())
        view.wait_for_function(
            "n => document.querySelectorAll('.lab-chart[data-drawn]').length === n", arg=charts
        )
        assert view.locator("h1").first.inner_text().strip() == heading
        text = view.locator("main").inner_text()
        if page_name == "gpt":
            assert "Prompt: The with statement" in text and "Layer: 1" in text
            assert view.locator("table").count() >= 1  # the sampling table, as the page wrote it
        result = Axe().run(view, options={"runOnly": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]})
        serious = [v["id"] for v in result.response["violations"] if v["impact"] in ("serious", "critical")]
        assert not serious, serious
        assert not errors, errors
        view.screenshot(path=str(tmp_path / f"{page_name}.png"), full_page=True)
    finally:
        offline.close()
