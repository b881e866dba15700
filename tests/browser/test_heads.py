"""/heads in a real browser: open it for a GPT and a reversal checkpoint, then click through
to the head's explorer and land at that layer and head."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Page

from tests.support.browser import assert_no_exception, open_page, wait_for_app


def params(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


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
    main = page.locator('[data-testid="stMain"]')
    for heading in ("Every head, scored", "Which heads the model needs", "Attention rollout", "Logit lens"):
        assert main.get_by_text(heading).count() >= 1, heading
    assert params(page)["open"] == "self:1.0"
    follow_open_link(page, "GPT", tmp_path / "gpt-from-heads.png")
    got = params(page)
    assert got["checkpoint"] == "gpt-induction" and got["layer"] == "1" and got["head"] == "0"


def test_heads_for_a_reversal_model_then_click_through(page: Page, app_url: str, tmp_path: Path):
    open_page(page, f"{app_url}/heads?checkpoint=reverse-rope&open=cross:1.2", tmp_path / "heads-rev.png")
    main = page.locator('[data-testid="stMain"]')
    assert main.get_by_text("Logit lens").count() == 0  # GPT only
    follow_open_link(page, "reversal", tmp_path / "reversal-from-heads.png")
    got = params(page)
    assert got["checkpoint"] == "reverse-rope" and got["layer"] == "1" and got["head"] == "2"
