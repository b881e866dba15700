"""/bert in a real browser: both models guess the blanks of a text typed from the keyboard,
a click on BERT's grid opens that head beside the GPT's, the held-out table beats chance, and
a phone in the dark scheme draws it all. Screenshots land in the test's tmp_path."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from attention_lab.frame.streamlit_dom import part
from tests.support.browser import chart, chart_cells, chart_title, click_head, open_page, settle

TEXT_LABEL = "Text, with [MASK] for each hidden character"


def described(page: Page, key: str) -> str:
    """The text alternative a chart's canvas points to (aria-describedby)."""
    about = chart(page, key).locator("canvas").get_attribute("aria-describedby")
    return chart(page, key).locator(f"#{about}").inner_text()


def percent(text: str) -> float:
    return float(text.strip().rstrip("%")) / 100


def test_bert_page_with_the_keyboard_and_a_click(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/bert", tmp_path / "bert.png")
    guesses = page.locator('.lab-table[data-key="bert_guesses"]')
    expect(guesses).to_contain_text("BERT (both sides)")
    expect(guesses).to_contain_text("GPT (left only)")
    main = page.locator(part("main"))
    expect(main).to_contain_text("BERT fills in: The return statement")  # the shipped model's best guess

    box = page.get_by_role("textbox", name=TEXT_LABEL)
    box.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type("import s[MASK]s")
    page.keyboard.press("Control+Enter")
    settle(page, {"text": "import s[MASK]s"}, tmp_path / "bert_typed.png")
    expect(guesses.locator("tbody tr")).to_have_count(1)
    expect(main).to_contain_text("BERT fills in: import sys")

    assert len(chart_cells(page, "bert_self_grid")) == 16  # 4 layers x 4 heads
    click_head(page, "bert_self_grid", 2, 1)
    chart_title(page, "bert_self_head", "BERT layer 2 head 1")
    chart_title(page, "bert_side_BERT", "BERT (bert-char): layer 2 head 1")
    chart_title(page, "bert_side_GPT", "GPT (gpt-rope): layer 2 head 1")
    assert "both ways" in described(page, "bert_side_BERT")
    assert "(causal)" in described(page, "bert_side_GPT")
    measured = page.locator('.lab-table[data-key="bert_measured"] tbody tr')
    bert, gpt, chance = (percent(measured.nth(i).locator("td").last.inner_text()) for i in range(3))
    assert bert > gpt > chance + 0.25
    page.screenshot(path=str(tmp_path / "bert_clicked.png"), full_page=True)


def test_bert_page_on_a_phone_in_the_dark(browser: Browser, app_url: str, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme="dark")
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, app_url + "/bert?text=no%20mask%20here", tmp_path / "bert_phone_dark.png")
        expect(page.locator(part("main"))).to_contain_text("Nothing is hidden yet")
        width = (
            chart(page, "bert_self_grid").locator("canvas").evaluate("c => c.getBoundingClientRect().width")
        )
        assert 300 < width <= 390
        ahead = page.locator('.lab-table[data-key="bert_ahead"]').inner_text()
        assert re.search(r"\d+\.\d%", ahead)
    finally:
        context.close()
