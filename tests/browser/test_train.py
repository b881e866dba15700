"""/train in a real browser: start a run, leave the page and come back, stop it."""

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.conftest import assert_no_exception, open_page, wait_for_app


def test_start_navigate_away_and_stop(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/train", tmp_path / "train-open.png")
    steps = page.get_by_label("Steps")
    if not steps.is_visible():
        page.get_by_text("Model shape and optimiser").click()
    steps.fill("10000")
    steps.press("Enter")
    wait_for_app(page)
    page.locator('[data-testid="stMain"]').get_by_role("button", name="Start").click()
    progress = page.locator('[data-testid="stProgress"]')
    expect(progress).to_contain_text("running", timeout=60_000)
    expect(page.locator('[data-testid="stVegaLiteChart"]').first).to_be_visible(timeout=60_000)
    page.screenshot(path=str(tmp_path / "train-running.png"), full_page=True)
    assert_no_exception(page)

    page.get_by_role("link", name="Reversal explorer").click()
    wait_for_app(page)
    page.get_by_role("link", name="Train a model").click()
    expect(page.locator('[data-testid="stProgress"]')).to_contain_text("running", timeout=30_000)
    if not page.get_by_label("Steps").is_visible():
        page.get_by_text("Model shape and optimiser").click()
    expect(page.get_by_label("Steps")).to_have_value("10000")  # settings survive the page change
    step_text = page.locator('[data-testid="stProgress"]').inner_text()

    page.locator('[data-testid="stMain"]').get_by_role("button", name="Stop").click()
    expect(page.locator('[data-testid="stProgress"]')).to_contain_text("stopped", timeout=15_000)
    assert step_text != page.locator('[data-testid="stProgress"]').inner_text()
    expect(page.get_by_text("is now a choice in the Reversal explorer")).to_be_visible(timeout=30_000)
    page.screenshot(path=str(tmp_path / "train-stopped.png"), full_page=True)
    assert_no_exception(page)
