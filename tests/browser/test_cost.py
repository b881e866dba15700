"""/cost in a real browser: chapter 004's figures on screen, both log-log charts drawn, the
sequence length moved and a forward pass timed from the keyboard alone, and the page on a
phone in the dark scheme. Screenshots land in the test's tmp_path."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.support.browser import assert_no_exception, chart, chart_title, open_page, settle, wait_for_app


def metric_value(page: Page, label_start: str) -> str:
    metric = page.locator('[data-testid="stMetric"]').filter(has_text=label_start).first
    return metric.locator('[data-testid="stMetricValue"]').inner_text().strip()


def test_cost_page_with_the_keyboard(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/cost", tmp_path / "cost.png")
    assert metric_value(page, "parameters of the built model") == "380,064"
    main = page.locator('[data-testid="stMain"]')
    expect(main).to_contain_text("526,368")
    expect(page.locator('.lab-table[data-key="cost_flops"]')).to_contain_text("1,125,120")
    chart_title(page, "cost_flops_fig", "FLOPs of one block, by part")
    chart_title(page, "cost_memory_fig", "Attention weights kept by one layer")
    assert metric_value(page, "one layer's weights at T = 10") == "1,600 bytes"

    thumb = page.locator('[data-testid="stSlider"] input[type="range"][aria-label="sequence length T"]')
    thumb.focus()
    for _ in range(5):
        thumb.press("ArrowRight")
    settle(page, {"T": "15"})
    expect(main).to_contain_text("one layer's weights at T = 15")
    assert metric_value(page, "one layer's weights at T = 15") == f"{4 * 15 * 15 * 4:,} bytes"

    button = page.get_by_role("button", name="Time one forward pass")
    button.focus()
    page.keyboard.press("Enter")
    wait_for_app(page)
    assert_no_exception(page)
    expect(
        page.locator('[data-testid="stMetric"]').filter(has_text="predicted from the FLOPs")
    ).to_be_visible()
    assert re.fullmatch(r"\d+\.\d\d ms", metric_value(page, "measured"))
    page.screenshot(path=str(tmp_path / "cost_timed.png"), full_page=True)


def test_cost_page_on_a_phone_in_the_dark(browser: Browser, app_url: str, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, app_url + "/cost?T=2048&window=256", tmp_path / "cost_phone_dark.png")
        assert metric_value(page, "one layer's weights at T = 2,048") == "67,108,864 bytes"
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
