"""The home page opens in a real browser and lists the shipped models."""

from pathlib import Path

from playwright.sync_api import Page, expect

from attention_lab.frame.streamlit_dom import part
from tests.support.browser import open_page


def test_home_lists_pages_and_models(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/", tmp_path / "home.png")
    body = page.locator(part("main")).inner_text()
    assert "Attention Lab" in body
    main = page.locator(part("main"))
    for card in ("GPT explorer", "Reversal explorer", "Attention basics", "Positional encodings"):
        expect(main).to_contain_text(card)  # page links load lazily: on a busy box a moment later
    assert "Running on" in body
