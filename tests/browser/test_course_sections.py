"""The chapters' sections in a real browser: /cost (chapter 004's figures, the log-log charts
with their table view and SVG, the sequence length moved and a forward pass timed from the
keyboard, a phone in the dark scheme), /basics's encoder block and tokens, and /gpt's sliding
window, from the keyboard alone. Screenshots land in the test's tmp_path."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from attention_lab.frame.streamlit_dom import part
from tests.support.browser import assert_no_exception, chart, chart_title, open_page, settle, wait_for_app

SVG = "{http://www.w3.org/2000/svg}"


def metric_value(page: Page, label_start: str) -> str:
    metric = page.locator(part("metric")).filter(has_text=label_start).first
    return metric.locator(part("metric_value")).inner_text().strip()


def test_cost_page_with_the_keyboard(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/cost", tmp_path / "cost.png")
    assert metric_value(page, "parameters of the built model") == "380,064"
    main = page.locator(part("main"))
    expect(main).to_contain_text("526,368")
    expect(page.locator('.lab-table[data-key="cost_flops"]')).to_contain_text("1,125,120")
    chart_title(page, "cost_flops_fig", "FLOPs of one block, by part")
    chart_title(page, "cost_memory_fig", "Attention weights kept by one layer")
    assert metric_value(page, "one layer's weights at T = 10") == "1.6 kB"
    expect(page.locator('.lab-table[data-key="cost_memory"]')).to_contain_text("1,600")

    thumb = page.locator(f'{part("slider")} input[type="range"][aria-label="sequence length T"]')
    thumb.focus()
    for _ in range(5):
        thumb.press("ArrowRight")
    settle(page, {"T": "15"})
    expect(main).to_contain_text("one layer's weights at T = 15")
    expect(page.locator('.lab-table[data-key="cost_memory"]')).to_contain_text(f"{4 * 15 * 15 * 4:,}")

    button = page.get_by_role("button", name="Time one forward pass")
    button.focus()
    page.keyboard.press("Enter")
    wait_for_app(page)
    assert_no_exception(page)
    expect(page.locator(part("metric")).filter(has_text="predicted from the FLOPs")).to_be_visible()
    assert re.fullmatch(r"\d+\.\d\d ms", metric_value(page, "measured"))
    page.screenshot(path=str(tmp_path / "cost_timed.png"), full_page=True)


def test_cost_page_on_a_phone_in_the_dark(browser: Browser, app_url: str, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, app_url + "/cost?T=2048&window=256", tmp_path / "cost_phone_dark.png")
        assert metric_value(page, "one layer's weights at T = 2,048") == "67.1 MB"
        expect(page.locator('.lab-table[data-key="cost_memory"]')).to_contain_text("67,108,864")
        legend = chart(page, "cost_memory_fig").get_attribute("data-legend") or ""
        assert "sliding window W = 256" in legend
        width = (
            chart(page, "cost_memory_fig").locator("canvas").evaluate("c => c.getBoundingClientRect().width")
        )
        assert 300 < width <= 390
        chart_title(page, "cost_flops_fig", "FLOPs of one block, by part")
        chart_title(page, "cost_kv_time_fig", "Time per written token, measured")
        chart_title(page, "cost_kv_keys_fig", "K in the cache")
    finally:
        context.close()


def test_the_flops_chart_downloads_as_svg_and_lists_its_numbers(browser: Browser, app_url: str) -> None:
    """A log-log chart keeps its values in the table view and its ticks as SVG text."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, color_scheme="dark", accept_downloads=True
    )
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, app_url + "/cost")
        holder = chart(page, "cost_flops_fig")
        holder.hover()
        with page.expect_download() as download:
            holder.locator(".save-svg").click()
        texts = [t.text or "" for t in ET.parse(download.value.path()).getroot().iter(f"{SVG}text")]
        assert "FLOPs of one block, by part" in texts and "100 M" in texts and "crossover T = 192" in texts
        holder.locator(".table-button").click()
        table = holder.locator(".data-table").inner_text()
        assert "1\t1\t384" in table and "8192" in table  # attention at T = 1: 4 · 1² · 96 FLOPs
    finally:
        context.close()


def test_the_new_basics_sections_with_the_keyboard(page: Page, app_url: str, tmp_path: Path) -> None:
    """/basics 7 and 8: the block's seed and the tokenizer's word typed from the keyboard."""
    open_page(page, app_url + "/basics")
    out = page.locator('.lab-table[data-key="basics_block_out"]')
    expect(out).to_contain_text("-0.661")  # chapter 004's trace at seed 42
    seed = page.get_by_role("spinbutton", name="random seed (input and weights)")
    seed.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type("7")
    page.keyboard.press("Enter")
    settle(page, {"block_seed": "7"})
    expect(out).not_to_contain_text("-0.661")
    word = page.get_by_label("a word or a phrase")
    word.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type("the statement")
    page.keyboard.press("Enter")
    settle(page, {"token_text": "the statement"})
    expect(page.locator('.lab-table[data-key="basics_token_pieces"]')).to_contain_text("Ġstatement")
    page.screenshot(path=str(tmp_path / "basics_tokens.png"), full_page=True)


def test_a_sliding_window_on_gpt_from_the_keyboard(page: Page, app_url: str) -> None:
    open_page(page, app_url + "/gpt")
    window = page.get_by_role("spinbutton", name="Sliding window W")
    window.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type("4")
    page.keyboard.press("Enter")
    settle(page, {"window": "4"})
    chart_title(page, "gpt_self_grid", "window 4")
    expect(page.locator(part("main"))).to_contain_text("With a window of 4, every query reads")
