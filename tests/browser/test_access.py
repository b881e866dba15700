"""Every student's screen: the charts follow the dark theme, work from the keyboard alone, say
what they show, list their numbers as a table, download as SVG, and no page scrolls sideways
on a phone; axe-core finds no serious or critical WCAG 2.1 AA violation on any page."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from attention_lab.charts.specs import WEIGHT_DIGITS, values
from attention_lab.explorers.explorer_html import contrast_ratio
from attention_lab.frame.streamlit_dom import KEY_CLASS, inline, keyed, part
from attention_lab.testing.servers import running_app
from tests.support.browser import PREPARED_LINKS, chart, chart_cells, open_page, params

PHONE = {"width": 390, "height": 844}
TABLET = {"width": 768, "height": 1024}
DESKTOP = {"width": 1280, "height": 720}
#: a theme of one's own in config ([theme] in .streamlit/config.toml; here as environment)
CUSTOM_THEME = {
    "STREAMLIT_THEME_BASE": "dark",
    "STREAMLIT_THEME_BACKGROUND_COLOR": "#1b1035",
    "STREAMLIT_THEME_TEXT_COLOR": "#fde68a",
}


@pytest.fixture
def dark_page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    context = browser.new_context(viewport=DESKTOP, color_scheme="dark", accept_downloads=True)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    pg.screenshot(path=str(tmp_path / "final.png"), full_page=True)
    context.close()


CANVAS_INK = """(canvas) => {
    // the canvas's background (its top-left pixel) and, in the title's band, the pixel that
    // differs most from it: the title's ink
    const ctx = canvas.getContext("2d"), dpr = canvas.width / canvas.clientWidth;
    const band = ctx.getImageData(0, 0, canvas.width, Math.round(26 * dpr)).data;
    const bg = [band[0], band[1], band[2]];
    let ink = bg, most = -1;
    for (let i = 0; i < band.length; i += 4) {
        const d = Math.abs(band[i] - bg[0]) + Math.abs(band[i + 1] - bg[1]) + Math.abs(band[i + 2] - bg[2]);
        if (d > most) [most, ink] = [d, [band[i], band[i + 1], band[i + 2]]];
    }
    return { bg, ink };
}"""


def test_chart_titles_contrast_in_dark_theme(dark_page: Page, app_url: str, tmp_path: Path) -> None:
    """Dark mode drew near-white titles on a white canvas; now the canvas takes the theme's
    background and the title its text colour (WCAG 1.4.3: 4.5:1 at least)."""
    open_page(dark_page, app_url + "/reversal?text=attention", tmp_path / "reversal-dark.png")
    for key in ("rev_cross_grid", "rev_cross_head"):
        found = chart(dark_page, key).locator("canvas").evaluate(CANVAS_INK)
        bg, ink = found["bg"], found["ink"]
        assert contrast_ratio(bg, (0, 0, 0)) < 2.0, bg  # a dark background, not the old white
        assert contrast_ratio(bg, ink) >= 4.5, (bg, ink)


def canvas_background(page: Page, key: str) -> list[int]:
    return chart(page, key).locator("canvas").evaluate(CANVAS_INK)["bg"]


def test_charts_follow_the_theme_picked_in_the_menu(page: Page, app_url: str, tmp_path: Path) -> None:
    """Streamlit's own menu switches light and dark without a rerun: every chart redraws in the
    theme it picked, its title readable on it."""
    open_page(page, app_url + "/reversal?text=attention")
    assert canvas_background(page, "rev_cross_head") == [255, 255, 255]
    for theme, dark in (("Dark", True), ("Light", False)):
        page.locator(part("main_menu")).click()
        page.get_by_role("menuitemradio", name=theme).click()
        page.keyboard.press("Escape")
        for key in ("rev_cross_grid", "rev_cross_head", "rev_enc_head"):
            for _ in range(50):  # the charts remount with the theme's colours
                if (contrast_ratio(canvas_background(page, key), (0, 0, 0)) < 2.0) == dark:
                    break
                page.wait_for_timeout(200)
            found = chart(page, key).locator("canvas").evaluate(CANVAS_INK)
            assert (contrast_ratio(found["bg"], (0, 0, 0)) < 2.0) == dark, (theme, key, found)
            assert contrast_ratio(found["bg"], found["ink"]) >= 4.5, (theme, key, found)
        page.screenshot(path=str(tmp_path / f"menu-{theme}.png"))


def test_a_custom_theme_reaches_charts_tips_and_tables(browser: Browser, tmp_path: Path) -> None:
    """A [theme] of one's own: the chart's background, its tip and its table view take its colours."""
    with running_app(tmp_path, CUSTOM_THEME) as url:
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        page.set_default_timeout(60_000)
        try:
            open_page(page, url + "/reversal?text=attention", tmp_path / "custom-theme.png")
            found = chart(page, "rev_cross_head").locator("canvas").evaluate(CANVAS_INK)
            assert found["bg"] == [0x1B, 0x10, 0x35]
            assert contrast_ratio(found["bg"], found["ink"]) >= 4.5, found
            holder = chart(page, "rev_cross_head")
            _, _, x, y, w, h = chart_cells(page, "rev_cross_head")[0]
            holder.locator("canvas").hover(position={"x": x + w / 2, "y": y + h / 2})
            tip = holder.locator(".tip")
            expect(tip).to_be_visible()
            look = "(el) => [getComputedStyle(el).backgroundColor, getComputedStyle(el).color]"
            assert tip.evaluate(look) == ["rgb(27, 16, 53)", "rgb(253, 230, 138)"]
            holder.locator(".table-button").click()
            assert holder.locator(".data-table").evaluate(look) == ["rgb(27, 16, 53)", "rgb(253, 230, 138)"]
        finally:
            context.close()


def test_a_tap_shows_what_hover_shows(browser: Browser, app_url: str, tmp_path: Path) -> None:
    """A phone has no hover: a tap on a cell of the cross-attention map shows its tip (tokens
    and weight), inside the chart."""
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, app_url + "/reversal?text=attention")
        holder = chart(page, "rev_cross_head")
        holder.scroll_into_view_if_needed()
        _, _, x, y, w, h = chart_cells(page, "rev_cross_head")[0]
        holder.locator("canvas").tap(position={"x": x + 3, "y": y + 3})  # query 0, key 0
        tip = holder.locator(".tip")
        expect(tip).to_be_visible()
        # a weight with WEIGHT_DIGITS decimals, or one too small for them in e-notation (never 0.000)
        said = tip.inner_text()
        weight = rf"(\d\.\d{{{WEIGHT_DIGITS}}}|\d\.\de-\d+)"
        assert re.search(rf"query 0: <sos>\s+key 0: a\s+weight {weight}$", said), said
        box, canvas = tip.bounding_box(), holder.locator("canvas").bounding_box()
        assert (
            box
            and canvas
            and box["x"] >= canvas["x"] - 1
            and box["x"] + box["width"] <= canvas["x"] + canvas["width"] + 1
        )
        page.screenshot(path=str(tmp_path / "tap.png"))
    finally:
        context.close()


def focused_chart_key(page: Page) -> str | None:
    """The widget key of the chart whose canvas has the keyboard's focus (None: not a chart)."""
    return page.evaluate(
        """() => {
            let el = document.activeElement;
            while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
            if (!el || el.tagName !== "CANVAS") return null;
            let host = el.getRootNode().host || el;
            const holder = host.closest(`[class*="${KEY_CLASS}"]`);
            const name = holder && [...holder.classList].find((c) => c.startsWith(KEY_CLASS));
            return name ? name.slice(KEY_CLASS.length) : null;
        }""".replace("KEY_CLASS", json.dumps(KEY_CLASS))
    )


def tab_to_chart(page: Page, key: str, presses: int = 80) -> None:
    """Press Tab (only the keyboard) until the chart under `key` has the focus."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if focused_chart_key(page) == key:
            return
    raise AssertionError(f"Tab never reached the chart {key}")


#: the focus ring of a focused element: its outline style and the box it reaches
RING = """(c) => { const s = getComputedStyle(c), r = c.getBoundingClientRect();
  const out = parseFloat(s.outlineOffset) + parseFloat(s.outlineWidth);
  return {style: s.outlineStyle, top: r.top - out, bottom: r.bottom + out,
          left: r.left - out, right: r.right + out}; }"""


def test_a_keyboard_only_walk_of_reversal(page: Page, app_url: str, tmp_path: Path) -> None:
    """Focus the encoder grid with Tab, move with the arrows, Enter opens a head (the URL and
    the large map follow); on the large map the live region names the tokens and the weight."""
    open_page(page, app_url + "/reversal?text=attention&layer=0&head=0", tmp_path / "open.png")
    tab_to_chart(page, "rev_enc_grid")
    grid = chart(page, "rev_enc_grid")
    # the focused canvas's ring lies inside the space the page gives the chart: outside it, it was cut off
    ring = grid.locator("canvas").evaluate(RING)
    box = page.locator(keyed("rev_enc_grid")).bounding_box()
    assert box and ring["style"] == "solid", ring
    assert box["y"] - 0.5 <= ring["top"] and ring["bottom"] <= box["y"] + box["height"] + 0.5, (ring, box)
    assert box["x"] - 0.5 <= ring["left"] and ring["right"] <= box["x"] + box["width"] + 0.5, (ring, box)
    for key in ("ArrowDown", "ArrowRight", "ArrowRight"):
        page.keyboard.press(key)
    expect(grid.locator(".live")).to_contain_text("layer 1 head 2")
    expect(grid.locator(".cursor")).to_be_visible()
    page.screenshot(path=str(tmp_path / "grid-cursor.png"))
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"layer=1.*head=2|head=2.*layer=1"), timeout=30_000)
    assert params(page)["layer"] == "1" and params(page)["head"] == "2"

    tab_to_chart(page, "rev_enc_head")
    head = chart(page, "rev_enc_head")
    expect(head.locator("canvas")).to_have_attribute("aria-label", re.compile("layer 1 head 2"))
    page.keyboard.press("ArrowDown")  # row 0 -> 1 ("t"), column 0 ("a")
    page.keyboard.press("ArrowRight")  # column 1 ("t")
    said = head.locator(".live").inner_text()
    assert re.fullmatch(rf"query 1: t, key 1: t, weight \d\.\d{{{WEIGHT_DIGITS}}}", said), said
    page.screenshot(path=str(tmp_path / "head-cursor.png"))


def test_show_as_table_lists_the_charts_numbers(page: Page, app_url: str) -> None:
    """The table view of the cross-attention map holds every weight the map was drawn from,
    written with WEIGHT_DIGITS decimals, under the map's token labels."""
    open_page(page, app_url + "/reversal?text=attention")
    holder = chart(page, "rev_cross_head")
    holder.locator(".table-button").click()
    expect(holder.locator(".table-button")).to_have_attribute("aria-expanded", "true")
    # the table and the buttons lie inside the space the page gave the chart (it is fixed:
    # below it they would be cut off), the buttons under the picture, not over its title
    outer = page.locator(keyed("rev_cross_head")).bounding_box()
    table_box = holder.locator(".data-table").bounding_box()
    tools_box, canvas_box = holder.locator(".tools").bounding_box(), holder.locator("canvas").bounding_box()
    assert outer and table_box and tools_box and canvas_box
    assert table_box["y"] + table_box["height"] <= outer["y"] + outer["height"] + 1
    assert tools_box["y"] >= canvas_box["y"] + canvas_box["height"] - 1
    assert tools_box["y"] + tools_box["height"] <= outer["y"] + outer["height"] + 1
    # the focused button's ring (2 px, 1 px off its border) lies inside that space too: it was cut off
    button = holder.locator(".table-button").bounding_box()
    assert button and button["y"] + button["height"] + 3 <= outer["y"] + outer["height"] + 0.5, button
    spec = holder.evaluate("(root) => root.__spec")
    (weights,) = values(spec)
    table = holder.locator(".data-table table").first
    header = [c.inner_text() for c in table.locator("thead th").all()][1:]
    rows = [[c.inner_text() for c in r.locator("th, td").all()] for r in table.locator("tbody tr").all()]
    assert header == spec["x"] and [r[0] for r in rows] == spec["y"]
    shown = np.array([[float(v) for v in r[1:]] for r in rows])
    assert shown.shape == weights.shape
    assert np.allclose(shown, weights, atol=0.5 * 10**-WEIGHT_DIGITS + 1e-6)


def test_a_chart_downloads_as_svg_with_its_title(dark_page: Page, app_url: str) -> None:
    """The SVG is drawn by the same paint code (svgcanvas's 2D context): it parses as SVG and
    holds the title as text, not pixels."""
    open_page(dark_page, app_url + "/reversal?text=attention")
    holder = chart(dark_page, "rev_cross_head")
    holder.hover()
    with dark_page.expect_download() as download:
        holder.locator(".save-svg").click()
    assert download.value.suggested_filename.endswith(".svg")
    root = ET.parse(download.value.path()).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    title = holder.locator("canvas").get_attribute("aria-label")
    assert title and title in texts
    assert any(t == "query" for t in texts) and any(t == "key" for t in texts)  # the axes, as text


#: the prepared links, /gpt with ALiBi (its step-through table had one more column), a tour's bar
PHONE_LINKS = [
    *PREPARED_LINKS,
    "/gpt?checkpoint=gpt-alibi&text=The%20with%20statement&layer=1&head=2",
    "/?tour=seed-chapters&scene=4",
]


#: how far the page scrolls sideways: the document, and Streamlit's own scrolling main area
SIDEWAYS = inline("""() => Math.max(...[document.documentElement, document.querySelector(part("main"))]
    .filter(Boolean).map((el) => el.scrollWidth - el.clientWidth))""")


@pytest.mark.parametrize("size", [PHONE, TABLET], ids=["390", "768"])
def test_no_page_scrolls_sideways(browser: Browser, app_url: str, size: dict, tmp_path: Path) -> None:
    context = browser.new_context(viewport=size, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    wide: dict[str, int] = {}
    try:
        for i, link in enumerate(PHONE_LINKS):
            open_page(page, app_url + link, tmp_path / f"page-{i}.png")
            page.wait_for_timeout(800)  # the charts' own drawing after the run
            if (by := page.evaluate(SIDEWAYS)) > 0:
                wide[link] = by
    finally:
        context.close()
    assert not wide, f"pages scroll sideways at {size['width']} px: {wide}"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])
def test_axe_finds_no_serious_violation(browser: Browser, app_url: str, scheme: str, size: dict) -> None:
    """axe-core (WCAG 2.0/2.1 A and AA rules) on every page's prepared link: no violation of
    serious or critical impact."""
    context = browser.new_context(viewport=size, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(60_000)
    found: dict[str, list[str]] = {}
    try:
        for link in PREPARED_LINKS:
            open_page(page, app_url + link)
            page.wait_for_timeout(800)
            result = Axe().run(page, options={"runOnly": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]})
            for v in result.response["violations"]:
                if v["impact"] in ("serious", "critical"):
                    found.setdefault(link, []).append(f"{v['id']}: {[n['target'] for n in v['nodes'][:3]]}")
    finally:
        context.close()
    assert not found, found


def test_the_page_menus_focused_link_shows_a_ring(page: Page, app_url: str) -> None:
    """Tab through the sidebar's page menu: the focused link had only the grey that also marks the
    current page (on the current page's own link, nothing changed); now a ring inside the sidebar."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, app_url + "/compare")
    sidebar = page.locator(part("sidebar")).bounding_box()
    found = inline('() => document.activeElement.matches(part("page_link"))')
    for _ in range(20):
        page.keyboard.press("Tab")
        if page.evaluate(found):
            break
    else:
        raise AssertionError("Tab never reached the page menu")
    ring = page.evaluate(f"({RING})(document.activeElement)")
    assert sidebar and ring["style"] == "solid", ring
    assert sidebar["x"] <= ring["left"] and ring["right"] <= sidebar["x"] + sidebar["width"], (ring, sidebar)
