"""/compare in a real browser at projector size: the reversal link a lecturer projects."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page

from tests.support.browser import assert_no_exception, chart, on_screen, open_page, wait_for_app


def params(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_reversal_link_side_by_side_at_1280x720(page: Page, app_url: str, tmp_path: Path) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(
        page, f"{app_url}/compare?a=reverse-rope&b=reverse-none&text=attention", tmp_path / "compare.png"
    )
    main = page.locator('[data-testid="stMain"]')
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
    switch = page.locator(".st-key-cmp_b_noscale label").first
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
    assert "is not available" not in page.locator('[data-testid="stMain"]').inner_text()
