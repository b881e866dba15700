"""View state a lecturer can trust (issue 11 #1, #2, #11), in a real browser: the controls
always show the state in use, a page keeps its setup across the sidebar and the browser's
Back, and a link's unusable values are named while the URL keeps only what was accepted."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from attention_lab.frame.streamlit_dom import inline, part
from tests.support.browser import (
    assert_no_exception,
    chart_box,
    chart_title,
    on_screen,
    open_page,
    params,
    settle,
    wait_for_app,
)

GPT_LINK = "/gpt?temperature=1.2&max_new=60&layer=2&head=3&text=The%20with%20statement"


def slider_value(page: Page, label: str) -> str:
    return page.get_by_role("slider", name=label).input_value()


PAGE_PATHS = {
    "GPT explorer": "/gpt",
    "Reversal explorer": "/reversal",
    "Attention basics": "/basics",
    "Positional encodings": "/positions",
}


def sidebar(page: Page, title: str) -> None:
    """Click a page in the sidebar menu and wait until the browser is on that page and its run
    has finished (a page's first visit keeps a bare URL: it shows the defaults)."""
    page.locator(f"{part('sidebar')} {part('page_link')}").filter(has_text=title).click()
    page.wait_for_function(
        "(path) => window.location.pathname.endsWith(path)",
        arg=PAGE_PATHS[title],
        timeout=30_000,
    )
    wait_for_app(page)
    assert_no_exception(page)


def test_clearing_and_retyping_the_prompt_keeps_every_control(
    page: Page, app_url: str, tmp_path: Path
) -> None:
    """#1: clearing the prompt stopped the page before its widgets were drawn; Streamlit then
    dropped their state and the sliders came back at their minimum while the URL, the sample
    and the map still used the old values."""
    open_page(page, app_url + GPT_LINK, tmp_path / "before.png")
    box = page.get_by_role("textbox", name="Prompt", exact=True)
    box.fill("")
    box.press("Control+Enter")
    wait_for_app(page)
    box.fill("import os")
    box.press("Control+Enter")
    settle(page, {"text": "import os"}, tmp_path / "after.png")
    assert (slider_value(page, "New characters"), slider_value(page, "Temperature")) == ("60", "1.2")
    assert slider_value(page, "Top-p (1 = off)") == "1"
    p = params(page)
    assert (p["temperature"], p["max_new"], p["layer"], p["head"]) == ("1.2", "60", "2", "3")
    chart_title(page, "gpt_self_head", "Layer 2 head 3")


def test_reversal_keeps_its_head_when_the_input_is_cleared(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/reversal?text=attention&layer=1&head=3", tmp_path / "before.png")
    box = page.get_by_role("textbox", name="Text to reverse (letters a–z, at most 30)", exact=True)
    box.fill("")
    box.press("Enter")
    wait_for_app(page)
    box.fill("lecture")
    box.press("Enter")
    settle(page, {"text": "lecture"}, tmp_path / "after.png")
    assert (params(page)["layer"], params(page)["head"]) == ("1", "3")


def test_a_page_keeps_its_setup_across_the_sidebar_and_back(page: Page, app_url: str, tmp_path: Path) -> None:
    """#2: GPT -> Reversal -> GPT in the sidebar came back to the defaults (same on /basics);
    Back returns to the previous page's view with one press."""
    open_page(page, app_url + GPT_LINK, tmp_path / "gpt.png")
    sidebar(page, "Reversal explorer")
    sidebar(page, "GPT explorer")
    settle(page, {"temperature": "1.2", "layer": "2", "head": "3"}, tmp_path / "gpt-again.png")
    expect(page.get_by_role("textbox", name="Prompt", exact=True)).to_have_value("The with statement")
    assert slider_value(page, "Temperature") == "1.2"

    open_page(page, app_url + "/basics?heads=2", tmp_path / "basics.png")
    before = params(page)
    sidebar(page, "Positional encodings")
    sidebar(page, "Attention basics")
    settle(page, before, tmp_path / "basics-again.png")

    entries = page.evaluate("history.length")
    sidebar(page, "Reversal explorer")
    assert page.evaluate("history.length") == entries + 1  # one press of Back undoes it
    page.go_back()
    settle(page, before, tmp_path / "back.png")
    assert "/basics" in page.url


def test_a_links_bad_values_are_named_and_not_kept(page: Page, app_url: str, tmp_path: Path) -> None:
    """#11: layer=99, head=-1, checkpoint=../../etc/passwd and a control character were reset
    silently; a rejected 10,000-character prompt stayed in the URL."""
    open_page(
        page,
        app_url + "/gpt?layer=99&head=-1&checkpoint=../../etc/passwd&temperature=abc%07&text=def%20f",
        tmp_path / "bad-link.png",
    )
    main = page.locator(part("main")).inner_text()
    assert "Ignored from the link" in main
    for shown in ("checkpoint=../../etc/passwd", "head=-1", "temperature=abc[U+0007]"):
        assert shown in main, shown
    assert "layer=99 is not available for this model" in main
    p = params(page)
    assert (p["checkpoint"], p["layer"], p["head"], p["temperature"]) == ("gpt-sinusoidal", "0", "0", "0.8")

    box = page.get_by_role("textbox", name="Prompt", exact=True)
    box.fill("x" * 10_000)
    box.press("Control+Enter")
    wait_for_app(page)
    page.screenshot(path=str(tmp_path / "too-long.png"))
    assert "at most" in page.locator(part("main")).inner_text()
    assert params(page)["text"] == "def f"  # the URL keeps the last accepted prompt


def test_a_lesson_links_notice_sits_clear_of_the_header(page: Page, app_url: str, tmp_path: Path) -> None:
    """On a lesson the notice of a link's unusable values comes before the title, and its top ran
    under Streamlit's opaque header (its icon and border cut off); on a phone the lessons' section
    headings were larger than the page's title."""
    at = inline("""() => ({
        header: document.querySelector(part("header")).getBoundingClientRect().bottom,
        notice: document.querySelector(keyed("link_notice")).getBoundingClientRect().top,
        h1: parseFloat(getComputedStyle(document.querySelector("h1")).fontSize),
        h2: parseFloat(getComputedStyle(document.querySelector("h2")).fontSize)})""")
    for width, height, scheme in ((1280, 720, "light"), (390, 844, "dark")):
        page.set_viewport_size({"width": width, "height": height})
        page.emulate_media(color_scheme=scheme)
        open_page(page, app_url + "/variance?d_k=0", tmp_path / f"notice-{width}-{scheme}.png")
        expect(page.get_by_text("Ignored from the link")).to_be_visible()
        box = page.evaluate(at)
        assert box["notice"] >= box["header"], (width, box)
        assert box["h1"] > box["h2"], (width, box)


def test_the_first_attention_map_is_above_the_fold(page: Page, app_url: str, tmp_path: Path) -> None:
    """#6: at 1280x720 the explorers showed ~620 px of header and controls and no map; now the
    grid starts with at least 200 px of it on the first screen, sidebar open."""
    for link, key in ((GPT_LINK, "gpt_self_grid"), ("/reversal?text=attention", "rev_cross_grid")):
        open_page(page, app_url + link, tmp_path / f"{key}.png")
        assert chart_box(page, key)["y"] <= 720 - 200, key


def font_size(page: Page, wanted: str | None = None) -> str:
    """The root font size; with `wanted`, first wait (up to 15 s) until it is that size: on a
    page switch the new page's style arrives with its run, a moment after the old one left."""
    if wanted is not None:
        try:
            page.wait_for_function(
                "(px) => getComputedStyle(document.documentElement).fontSize === px",
                arg=wanted,
                timeout=15_000,
            )
        except PlaywrightTimeout:
            pass  # the assertion below names the size there is
    return page.evaluate("() => getComputedStyle(document.documentElement).fontSize")


def test_projector_mode_is_kept_across_pages_and_links(page: Page, app_url: str, tmp_path: Path) -> None:
    """?present=1: sidebar collapsed, larger type, captions hidden, the grid and the selected head
    on the screen without scrolling;
    the links the pages write keep present=1, also after the sidebar takes you elsewhere."""
    open_page(page, app_url + "/reversal?present=1&text=attention", tmp_path / "present-reversal.png")
    assert font_size(page, "19px") == "19px"
    expect(page.locator(part("collapsed_sidebar"))).to_have_count(1)
    assert not page.locator(part("caption")).first.is_visible()
    assert on_screen(page, "rev_cross_grid") and on_screen(page, "rev_cross_head")
    assert params(page)["present"] == "1"

    box_input = page.get_by_role("textbox", name="Text to reverse (letters a–z, at most 30)", exact=True)
    box_input.fill("lecture")
    box_input.press("Enter")
    settle(page, {"text": "lecture", "present": "1"})

    page.locator(part("expand_sidebar")).click()
    sidebar(page, "GPT explorer")
    settle(page, {"present": "1"}, tmp_path / "present-gpt.png")
    assert font_size(page, "19px") == "19px"
    assert on_screen(page, "gpt_self_grid") and on_screen(page, "gpt_self_head")

    sidebar_panel = page.locator(part("sidebar"))
    if page.locator(part("collapsed_sidebar")).count():
        page.locator(part("expand_sidebar")).click()
    sidebar_panel.get_by_text("Projector mode", exact=True).click()  # and off again
    page.wait_for_function("() => !new URLSearchParams(location.search).has('present')", timeout=30_000)
    wait_for_app(page)
    assert font_size(page) != "19px"
