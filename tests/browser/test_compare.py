"""/compare in a real browser at projector size: the reversal link a lecturer projects."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page

from attention_lab.frame.streamlit_dom import keyed, part
from tests.support.browser import assert_no_exception, chart, on_screen, open_page, wait_for_app


def params(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_reversal_link_side_by_side_at_1280x720(page: Page, app_url: str, tmp_path: Path) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(
        page, f"{app_url}/compare?a=reverse-rope&b=reverse-none&text=attention", tmp_path / "compare.png"
    )
    main = page.locator(part("main"))
    assert "A writes noitnetta — the input reversed" in main.inner_text()
    for key in ("cmp_a_grid", "cmp_b_grid", "cmp_a_head", "cmp_b_head", "cmp_diff_head"):
        drawn = chart(page, key)
        drawn.scroll_into_view_if_needed()
        assert drawn.count() == 1, key
        box = drawn.bounding_box()
        assert box is not None and box["width"] > 200 and box["x"] + box["width"] <= 1280, key
        page.screenshot(path=str(tmp_path / f"{key}.png"))
    got = params(page)
    assert got["a"] == "reverse-rope" and got["b"] == "reverse-none" and got["kind"] == "cross"

    # a switch on side B reruns the page, mirrors into the link, and shows no exception
    switch = page.locator(f"{keyed('cmp_b_noscale')} label").first
    switch.evaluate("e => e.scrollIntoView({block: 'center'})")
    switch.click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('b_noscale') === 'true'")
    wait_for_app(page)
    assert_no_exception(page)
    page.screenshot(path=str(tmp_path / "compare-noscale.png"), full_page=True)


def test_projected_comparison_fits_both_grids_on_one_screen(page: Page, app_url: str, tmp_path: Path) -> None:
    """USERS.md walk 6: /compare projected (present=1) at 1280x720: both grids on the screen
    without scrolling, no notice about a value nobody gave (`kind=` was named empty)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    link = f"{app_url}/compare?a=reverse-rope&b=reverse-none&text=attention&present=1"
    open_page(page, link, tmp_path / "compare-present.png")
    assert on_screen(page, "cmp_a_grid") and on_screen(page, "cmp_b_grid")
    assert "is not available" not in page.locator(part("main")).inner_text()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize(
    "size", [{"width": 1280, "height": 720}, {"width": 390, "height": 844}], ids=["1280", "390"]
)
def test_two_gpts_geometry_and_the_value_weighted_switch(
    browser: Browser, app_url: str, tmp_path: Path, scheme: str, size: dict
) -> None:
    """Two GPTs: both sides' query/key geometry drawn within the page's width, their R² table,
    the value-weighted switch reached and flipped from the keyboard, axe finding nothing serious."""
    context = browser.new_context(viewport=size, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(90_000)
    try:
        open_page(page, f"{app_url}/compare?a=gpt-learned&b=gpt-rope&text=def%20f(x)&layer=1&head=0")
        for key in ("cmp_a_geometry", "cmp_b_geometry"):
            drawn = chart(page, key)
            drawn.scroll_into_view_if_needed()
            box = drawn.bounding_box()
            assert box is not None and box["x"] + box["width"] <= size["width"], key
        assert "in the rotation of q and k" in page.locator(part("main")).inner_text()
        switch = page.get_by_role("switch", name="Value-weighted: what each key sends")
        switch.focus()
        page.keyboard.press("Space")
        page.wait_for_function("() => new URLSearchParams(location.search).get('weighted') === 'true'")
        wait_for_app(page)
        assert_no_exception(page)
        page.screenshot(path=str(tmp_path / f"compare-gpts-{scheme}-{size['width']}.png"), full_page=True)
        result = Axe().run(page, options={"runOnly": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]})
        serious = [v["id"] for v in result.response["violations"] if v["impact"] in ("serious", "critical")]
        assert not serious, serious
    finally:
        context.close()
