"""The lesson pages in a real browser: deep links, sliders moved from the keyboard,
redrawn figures, no exception anywhere. Screenshots land in the test's tmp_path."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from playwright.sync_api import Locator, Page, expect

from attention_lab.frame.streamlit_dom import inline, keyed, part
from tests.support.browser import assert_no_exception, chart_cells, chart_title, open_page, wait_for_app

RENDERED = inline("""() => {
    if (document.querySelector(part("skeleton"))) return false;
    const hosts = document.querySelectorAll(part("main") + " " + part("component"));
    return hosts.length > 0 && Array.from(hosts).every(
        h => h.shadowRoot && h.shadowRoot.querySelector('.lab-chart[data-drawn]'));
}""")


def settle(page: Page) -> None:
    """Script run finished and every element drawn (figures load lazily)."""
    wait_for_app(page)
    page.wait_for_function(RENDERED, timeout=60_000)
    assert_no_exception(page)


def thumb_of(page: Page, label: str) -> Locator:
    """The focusable range input inside the slider labelled `label`."""
    return page.locator(f'{part("slider")} input[type="range"][aria-label="{label}"]')


def move_slider(page: Page, label: str, key: str, times: int) -> None:
    thumb = thumb_of(page, label)
    thumb.focus()
    for _ in range(times):
        thumb.press(key)
    settle(page)


def slider_value(page: Page, label: str) -> str:
    return thumb_of(page, label).get_attribute("aria-valuetext") or ""


def main_text(page: Page) -> str:
    return page.locator(part("main")).inner_text()


def metric_value(page: Page, label_start: str) -> str:
    metric = page.locator(part("metric")).filter(has_text=label_start).first
    return metric.locator(part("metric_value")).inner_text().strip()


def test_basics_page(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/basics?heads=4&positions=true&k4=3")  # a prepared link
    settle(page)
    page.screenshot(path=str(tmp_path / "basics.png"), full_page=True)
    text = main_text(page)
    assert "(0.5718, 0.6019)" in text
    chart_title(page, "basics_head_fig_3", "head 3: feature 3")  # four heads from the link
    assert "With positions added" in text
    assert metric_value(page, "Gaussian prediction") == "103.753"
    assert metric_value(page, "Boxcar prediction") == "120.000"
    masked = page.locator('.lab-table[data-key="basics_masked_table"]')  # an HTML table, no grid
    expect(masked).to_contain_text("0.731")  # weights with WEIGHT_DIGITS decimals, as everywhere
    expect(masked).not_to_contain_text("0.7311")
    expect(page.locator(".lab-formula")).to_contain_text("softmax")  # HTML maths, no KaTeX
    assert page.locator(f"{part('dataframe')}, .katex").count() == 0
    score = page.get_by_label("row 2, key 1")  # the scores are number inputs
    score.fill("-1.5")
    score.press("Enter")
    settle(page)
    row2 = np.exp([0.3, -1.5, 0.2]) / np.exp([0.3, -1.5, 0.2]).sum()
    expect(masked.locator("tbody tr").nth(1)).to_contain_text(f"{row2[1]:.3f}")
    expect(page).to_have_url(re.compile(r"s21=-1\.5"))
    move_slider(page, "query location", "ArrowRight", 2)  # 2.0 -> 3.0
    assert slider_value(page, "query location") == "3.00"
    assert metric_value(page, "Gaussian prediction") != "103.753"
    assert metric_value(page, "Boxcar prediction") == "90.000"  # only the house at 3 is within 1
    expect(page).to_have_url(re.compile(r"house=3\.0.*heads=4"))
    page.screenshot(path=str(tmp_path / "basics_moved.png"))


def test_positions_page(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/positions?d_model=32&length=20&offset=4")
    settle(page)
    assert slider_value(page, "d_model") == "32" and slider_value(page, "number of positions") == "20"
    chart_title(page, "positions_pe_heat", "20 positions × 32 dimensions")
    [(_, _, _, _, width, height)] = chart_cells(page, "positions_pe_heat")
    assert width > 400 and height > 200  # the table is drawn as a map, not an empty box
    assert float(metric_value(page, "max |M·PE(p)")) < 1e-6
    page.screenshot(path=str(tmp_path / "positions.png"), full_page=True)
    move_slider(page, "d_model", "ArrowLeft", 3)  # 32 -> 26
    chart_title(page, "positions_pe_heat", "20 positions × 26 dimensions")
    expect(page).to_have_url(re.compile(r"d_model=26"))
    move_slider(page, "offset Δ", "ArrowRight", 1)
    assert float(metric_value(page, "max |M·PE(p)")) < 1e-6
    assert float(metric_value(page, "spread of the RoPE scores")) < 1e-5
    page.screenshot(path=str(tmp_path / "positions_moved.png"))


def test_variance_page(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/variance?d_k=4")
    settle(page)
    chart_title(page, "variance_var_hist", "d_k = 4: 5000 random")
    move_slider(page, "d_k", "ArrowRight", 3)  # 4 -> 7
    assert slider_value(page, "d_k") == "7"
    chart_title(page, "variance_var_hist", "d_k = 7: 5000 random")
    expect(page).to_have_url(re.compile(r"d_k=7"))
    chart_title(page, "variance_scale_grid", "scaled as trained")
    page.get_by_text("no scaling", exact=True).click()
    settle(page)
    chart_title(page, "variance_scale_grid", "cross-attention, no scaling")
    page.screenshot(path=str(tmp_path / "variance.png"), full_page=True)
    move_slider(page, "smoothing ε", "ArrowRight", 1)  # 0.10 -> 0.11
    assert metric_value(page, "probability on the true class") == "0.9010"


def test_hovering_a_curve_names_its_nearest_point(page: Page, app_url: str) -> None:
    """The canvas charts' hover: the learning-rate peak at the end of warm-up reads its step
    and value (the schedule's peak is 512^-0.5 * 4000^-0.5 = 6.988e-4)."""
    open_page(page, app_url + "/variance?lr_d_model=512&warmup=4000&total=20000")
    settle(page)
    lr = page.locator(f"{keyed('variance_lr_fig')} .lab-chart[data-drawn]")
    lr.scroll_into_view_if_needed()
    [(_, _, x, y, w, h)] = chart_cells(page, "variance_lr_fig")
    box = lr.locator("canvas").bounding_box()
    assert box is not None
    top = 8e-4  # the axis' round top above the peak
    page.mouse.move(box["x"] + x + w * (4000 - 1) / (20000 - 1), box["y"] + y + h * (1 - 6.988e-4 / top))
    tip = lr.locator(".tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text(re.compile(r"step (399[0-9]|400[0-9])"))  # the point nearest the pointer
    expect(tip).to_contain_text("learning rate 6.98")


def test_a_value_of_minus_one_is_drawn_and_named_not_taken_for_a_gap(page: Page, app_url: str) -> None:
    """ALiBi's bias of head 0 (slope 0.5) is exactly −1.0 two keys back: a float32 −1 once
    decoded as the quantized maps' gap code, drawn grey and named "masked"."""
    open_page(page, app_url + "/positions?alibi_heads=8&alibi_len=6&alibi_head=0")
    settle(page)
    bias = page.locator(f"{keyed('positions_alibi_bias')} .lab-chart[data-drawn]")
    bias.scroll_into_view_if_needed()
    [(_, _, x, y, w, h)] = chart_cells(page, "positions_alibi_bias")
    box = bias.locator("canvas").bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + x + w * 0.5 / 6, box["y"] + y + h * 2.5 / 6)  # query 2, key 0
    tip = bias.locator(".tip")
    expect(tip).to_contain_text("query 2")
    expect(tip).to_contain_text("bias -1.0")
