"""/heads in a real browser: open it for a GPT and a reversal checkpoint, then click through
to the head's explorer and land at that layer and head."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Browser, Page, expect

from attention_lab.frame.streamlit_dom import part
from tests.support.browser import (
    assert_no_exception,
    chart,
    chart_legend,
    chart_title,
    open_page,
    wait_for_app,
)


def params(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def svg_texts(page: Page, key: str) -> list[str]:
    """The chart's SVG download (drawn by the same paint code), parsed: its text elements."""
    holder = chart(page, key)
    holder.scroll_into_view_if_needed()
    holder.hover()
    with page.expect_download() as download:
        holder.locator(".save-svg").click()
    root = ET.parse(download.value.path()).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


def follow_open_link(page: Page, explorer: str, shot: Path) -> None:
    link = page.get_by_role("link", name=f"in the {explorer} explorer")
    link.scroll_into_view_if_needed()
    link.click()
    page.wait_for_url("**/" + ("gpt" if explorer == "GPT" else "reversal") + "?*", timeout=60_000)
    wait_for_app(page)
    assert_no_exception(page)
    page.screenshot(path=str(shot), full_page=True)


def test_heads_for_a_gpt_then_click_through_to_the_gpt_explorer(page: Page, app_url: str, tmp_path: Path):
    open_page(page, f"{app_url}/heads?checkpoint=gpt-induction&open=self:1.0", tmp_path / "heads-gpt.png")
    main = page.locator(part("main"))
    for heading in ("Every head, scored", "Which heads the model needs", "Attention rollout", "Logit lens"):
        assert main.get_by_text(heading).count() >= 1, heading
    assert params(page)["open"] == "self:1.0"
    follow_open_link(page, "GPT", tmp_path / "gpt-from-heads.png")
    got = params(page)
    assert got["checkpoint"] == "gpt-induction" and got["layer"] == "1" and got["head"] == "0"


def test_heads_for_a_reversal_model_then_click_through(page: Page, app_url: str, tmp_path: Path):
    open_page(page, f"{app_url}/heads?checkpoint=reverse-rope&open=cross:1.2", tmp_path / "heads-rev.png")
    main = page.locator(part("main"))
    assert main.get_by_text("Logit lens").count() == 0  # GPT only
    follow_open_link(page, "reversal", tmp_path / "reversal-from-heads.png")
    got = params(page)
    assert got["checkpoint"] == "reverse-rope" and got["layer"] == "1" and got["head"] == "2"


def test_why_a_head_attends_with_the_keyboard(page: Page, app_url: str, tmp_path: Path) -> None:
    """/heads 9 on gpt-induction's induction head: the last query 'x' opens on its induction target
    (the 'q' after the earlier 'x'), where the largest part is the token embedding against a
    layer-0 head; another query picked from the keyboard splits again and still sums."""
    open_page(page, f"{app_url}/heads?checkpoint=gpt-induction&open=self:1.1")
    chart_title(page, "heads_why_map", "Score parts: query 23 'x' → key 12 'q'")
    bars = chart(page, "heads_why_bars")
    bars.scroll_into_view_if_needed()
    bars.locator(".table-button").click()
    lines = bars.locator(".data-table").inner_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("label"))
    assert lines[header + 1].startswith("embed × L0H"), lines  # the largest part, first
    caption = page.locator(part("caption")).filter(has_text="differs from the model's own score")
    gap = float(re.search(r"own score by ([0-9.e+-]+)\.", caption.inner_text()).group(1))
    assert gap < 1e-4
    box = page.get_by_role("combobox", name="Query position")
    box.focus()
    page.keyboard.type("15 ")
    page.keyboard.press("Enter")
    wait_for_app(page)
    assert_no_exception(page)
    chart_title(page, "heads_why_map", "Score parts: query 15 'z' → key 4 'k'")
    page.screenshot(path=str(tmp_path / "heads_why.png"))
    cells = chart(page, "heads_why_cell").locator("canvas")  # the head's map: a cell picked by keys
    cells.focus()
    for key in ["ArrowRight", *["ArrowDown"] * 5, "ArrowRight", "ArrowRight", "Enter"]:
        page.keyboard.press(key)
    page.wait_for_function("() => new URLSearchParams(location.search).get('why_key') === '2'")
    wait_for_app(page)
    assert params(page)["why_query"] == "5"
    split = chart(page, "heads_why_map").locator("canvas")
    expect(split).to_have_attribute(
        "aria-label", re.compile(r"Score parts: query 5 '.' → key 2 '.'"), timeout=20_000
    )
    box = cells.bounding_box()
    assert box is not None
    cells.click(position={"x": box["width"] * 0.6, "y": box["height"] * 0.75})  # and by the mouse
    page.wait_for_function("() => new URLSearchParams(location.search).get('why_query') !== '5'")
    wait_for_app(page)
    assert_no_exception(page)
    q, k = params(page)["why_query"], params(page)["why_key"]
    expect(split).to_have_attribute(
        "aria-label", re.compile(rf"Score parts: query {q} '.' → key {k} '.'"), timeout=20_000
    )
    assert int(k) <= int(q)  # a causal head's cell
    geometry = chart(page, "heads_geometry")  # section 10: the same head's queries and keys
    chart_title(page, "heads_geometry", "Layer 1 head 1: queries and keys")
    geometry.scroll_into_view_if_needed()
    geometry.locator(".table-button").click()
    rows = geometry.locator(".data-table").inner_text()
    assert re.search(r"'[a-z]' at \d+", rows)  # every point named by its character and position
    chart_legend(page, "heads_geometry", "to its 5 highest-scoring keys")  # a query linked to its keys
    page.get_by_role("radio", name="Token kind").focus()  # coloured by kind of token, from the keyboard
    page.keyboard.press("Space")
    page.wait_for_function("() => new URLSearchParams(location.search).get('geo_colour') === 'token'")
    wait_for_app(page)
    chart_legend(page, "heads_geometry", "space or line break")
    page.screenshot(path=str(tmp_path / "heads_geometry.png"))
    profile = page.locator('.lab-table[data-key="heads_profile_table"]')  # section 11: over 64 windows
    expect(profile.locator("tbody tr")).to_have_count(8)  # 2 layers x 4 heads
    pairs = page.locator('.lab-table[data-key="heads_profile_pairs"] tbody tr')
    expect(pairs).to_have_count(20)
    assert re.search(r"\[[a-z]\].*\{[a-z]\}", pairs.first.inner_text())  # the key, then the query
    for key in (
        "heads_why_cell",
        "heads_why_map",
        "heads_why_bars",
        "heads_geometry",
    ):  # each new chart as SVG, titled
        title = chart(page, key).locator("canvas").get_attribute("aria-label")
        assert title and title in svg_texts(page, key), key


def test_why_a_head_attends_on_a_phone_in_the_dark(browser: Browser, app_url: str, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, f"{app_url}/heads?checkpoint=reverse-alibi&open=cross:1.0")
        chart_title(page, "heads_why_map", "Score parts: query")
        width = (
            chart(page, "heads_why_bars").locator("canvas").evaluate("c => c.getBoundingClientRect().width")
        )
        assert 300 < width <= 390
        chart(page, "heads_why_map").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "heads_why_phone_dark.png"))
    finally:
        context.close()
