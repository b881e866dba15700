""" "Download this view (HTML)" on the pages: the file holds the page's title, text, widget
values, tables and every chart it showed, and opens from file:// with the network off, every
chart drawn and axe finding nothing serious."""

from __future__ import annotations

from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, expect

from attention_lab.frame.streamlit_dom import keyed, part
from tests.support.browser import assert_no_exception, open_page, wait_for_app

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
        if page_name == "gpt":  # a multiselect's picks are written too
            page.get_by_role("combobox", name="Ablate heads").click()
            page.get_by_role("option", name="L0 H1").click()
            page.keyboard.press("Escape")
            wait_for_app(page)
        page.wait_for_timeout(1500)  # every chart mounted (lesson pages draw some after the run)
        charts = page.locator(".lab-chart").count()
        heading = page.locator(f"{part('main')} h1").first.inner_text().strip()
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
            assert "Checkpoint: gpt-sinusoidal" in text and "Ablate heads: L0 H1" in text
            assert view.locator("table").count() >= 1  # the sampling table, as the page wrote it
        result = Axe().run(view, options={"runOnly": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]})
        serious = [v["id"] for v in result.response["violations"] if v["impact"] in ("serious", "critical")]
        assert not serious, serious
        assert not errors, errors
        view.screenshot(path=str(tmp_path / f"{page_name}.png"), full_page=True)
    finally:
        offline.close()


def test_a_tour_downloads_with_every_scene_and_walks_offline_with_the_arrow_keys(
    browser: Browser, app_url: str, tmp_path: Path
) -> None:
    """On scene 2 of a starter tour, "Download this tour (HTML)" walks all 7 scenes with the
    tour bar's own buttons, comes back to scene 2, and the file shows one scene at a time:
    Next and the arrow keys move, each scene's charts are drawn."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(60_000)
    bar = page.locator(f"{keyed('tour_bar')} [role=status]")
    try:
        open_page(page, app_url + "/?tour=chapter-004&scene=2")
        assert "scene 2 of 7" in bar.inner_text()
        with page.expect_download(timeout=240_000) as download:
            page.get_by_role("button", name="Download this tour (HTML)").click()
        path = tmp_path / download.value.suggested_filename
        download.value.save_as(path)
        expect(bar).to_contain_text("scene 2 of 7")  # back where the lecturer was
        assert_no_exception(page)
    finally:
        context.close()
    assert path.name == "attention-lab-tour.html"

    offline = browser.new_context(viewport={"width": 1280, "height": 720}, offline=True)
    view = offline.new_page()
    errors: list[str] = []
    view.on("pageerror", lambda e: errors.append(str(e)))
    shown = view.locator(".lab-scene:not([hidden]) > h2")
    try:
        view.goto(path.as_uri())
        assert view.locator(".lab-scene").count() == 7
        expect(shown).to_have_text("Scene 1 of 7: Positional encodings")
        view.get_by_role("button", name="Next scene ▶").click()
        expect(shown).to_have_text("Scene 2 of 7: Reversal explorer")
        view.keyboard.press("ArrowRight")
        expect(shown).to_have_text("Scene 3 of 7: Reversal explorer")
        view.keyboard.press("ArrowLeft")
        expect(shown).to_have_text("Scene 2 of 7: Reversal explorer")
        charts = view.locator(".lab-scene:not([hidden]) .lab-chart")
        drawn = "s => [...document.querySelectorAll(s)].every(c => c.dataset.drawn)"
        view.wait_for_function(drawn, arg=".lab-scene:not([hidden]) .lab-chart")
        assert charts.count() >= 2
        assert "scene 2 of 7" in view.locator(".lab-scene:not([hidden])").inner_text()  # the scene's note
        result = Axe().run(view, options={"runOnly": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]})
        serious = [v["id"] for v in result.response["violations"] if v["impact"] in ("serious", "critical")]
        assert not serious, serious
        assert not errors, errors
    finally:
        offline.close()
