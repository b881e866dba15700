"""Issue 23, tours in the browser: the starter tour projected (present=1) steps with the arrow
keys alone, the scene's note above the page."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from attention_lab.frame.streamlit_dom import inline, keyed
from tests.support.browser import assert_no_exception, open_page, wait_for_app


def press_until(page: Page, key: str, url: re.Pattern[str]) -> None:
    """Press `key` on the page (nothing focused) until the URL matches: a press that lands
    while the page is still running (a busy box) may come before its shortcuts are bound."""
    for _ in range(3):
        wait_for_app(page)
        page.locator("body").press(key)
        try:
            expect(page).to_have_url(url, timeout=10_000)
            return
        except AssertionError:
            continue
    expect(page).to_have_url(url, timeout=10_000)


def test_the_arrow_keys_step_through_a_projected_tour(page: Page, app_url: str, tmp_path: Path) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, app_url + "/?tour=seed-chapters&present=1")
    expect(page).to_have_url(re.compile(r"/basics\?.*tour=seed-chapters"), timeout=30_000)
    expect(page.get_by_text("scene 1 of 6")).to_be_visible()
    page.screenshot(path=str(tmp_path / "tour-1.png"))
    press_until(page, "ArrowRight", re.compile(r"/positions\?.*scene=2"))
    expect(page).to_have_url(re.compile(r"present=1"))  # projector mode stays on
    wait_for_app(page)
    expect(page.get_by_text("scene 2 of 6")).to_be_visible()
    press_until(
        page, "ArrowRight", re.compile(r"/variance\?.*d_k=256.*scene=3|/variance\?.*scene=3.*d_k=256")
    )
    press_until(page, "ArrowLeft", re.compile(r"/positions\?.*scene=2"))
    wait_for_app(page)
    page.screenshot(path=str(tmp_path / "tour-2.png"))
    assert_no_exception(page)


def test_projected_the_tour_bar_stays_below_the_header_as_the_page_scrolls(page: Page, app_url: str) -> None:
    """Projector mode's header is 2.2rem (Streamlit's own min-height of 3.75rem had kept it
    there, its buttons and background over the top of the stuck bar): scrolled, the bar sticks
    just below it and the header's buttons end above the bar, in light and dark."""
    boxes = inline("""() => ({
        header: document.querySelector(part("header")).getBoundingClientRect().bottom,
        buttons: Math.max(...[...document.querySelectorAll(part("header") + " button")]
            .map((b) => b.getBoundingClientRect().bottom)),
        bar: document.querySelector(keyed("tour_bar")).getBoundingClientRect().top})""")
    for scheme in ("light", "dark"):
        page.set_viewport_size({"width": 1280, "height": 720})
        page.emulate_media(color_scheme=scheme)
        open_page(page, app_url + "/?tour=seed-chapters&scene=3&present=1")
        page.mouse.move(640, 400)
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(800)
        at = page.evaluate(boxes)
        assert at["buttons"] <= at["bar"] and at["header"] <= at["bar"] + 0.5, at
        assert at["bar"] < 2.5 * 19  # stuck at the header's 2.2rem (19 px type), not further down
        assert_no_exception(page)


def test_the_tour_bar_and_the_title_sit_clear_of_the_header(page: Page, app_url: str, tmp_path: Path) -> None:
    """After Next the scene's bar opens the page: its border shows below Streamlit's header (it
    sat under it), in dark at 390 too; a one-line title leaves no empty line under it at 390
    (its hover anchor wrapped onto a line of its own)."""
    header_and_bar = inline("""() => [
        document.querySelector(part("header")).getBoundingClientRect().bottom,
        document.querySelector(keyed("tour_bar")).getBoundingClientRect().top]""")
    for width, height, scheme in ((1280, 720, "light"), (390, 844, "dark")):
        page.set_viewport_size({"width": width, "height": height})
        page.emulate_media(color_scheme=scheme)
        open_page(page, app_url + "/?tour=seed-chapters&scene=3")
        page.get_by_role("button", name="Next").click()
        expect(page).to_have_url(re.compile(r"/reversal\?.*scene=4"), timeout=30_000)
        wait_for_app(page)
        header_bottom, bar_top = page.evaluate(header_and_bar)
        page.screenshot(path=str(tmp_path / f"tour-bar-{width}-{scheme}.png"))
        assert bar_top >= header_bottom, (width, bar_top, header_bottom)
        assert_no_exception(page)
    title = page.locator("h1", has_text="Reversal explorer")
    one_line = page.evaluate("() => parseFloat(getComputedStyle(document.querySelector('h1')).lineHeight)")
    assert title.bounding_box()["height"] < 2 * one_line  # type: ignore[index]


def test_a_scenes_whole_note_shows_on_hover_or_focus(page: Page, app_url: str) -> None:
    """The bar keeps a scene's note to two lines; the rest could not be read (but by a screen
    reader). Hovering it, or focusing it (a tap, Tab), shows all of it."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, app_url + "/?tour=seed-chapters&scene=3")
    note = page.locator(keyed("tour_bar")).locator('[role="status"]')
    size = "(e) => [e.clientHeight, e.scrollHeight]"
    shown, whole = note.evaluate(size)
    assert shown < whole, (shown, whole)  # this scene's note is longer than two lines at 1280
    note.focus()
    shown, whole = note.evaluate(size)
    assert shown >= whole, (shown, whole)
    note.blur()
    page.mouse.move(640, 600)
    assert note.evaluate(size)[0] < whole
    note.hover()
    shown, whole = note.evaluate(size)
    assert shown >= whole, (shown, whole)
    assert_no_exception(page)
