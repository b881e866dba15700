"""An imported byte-level BPE GPT in Chromium (issue 25): an admin's models folder
(ATTENTION_LAB_MODELS_DIR) holding a small GPT-2-layout model imported with `import --from hf`;
/gpt opens it by link over prompt + sample at 1280 px light and 390 px dark, its maps and
sampled text show BPE pieces (␣the), and a sampled token picked with the keyboard is explained."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from attention_lab.frame.streamlit_dom import part
from attention_lab.testing.servers import running_app
from tests.support.browser import assert_no_exception, chart, chart_title, open_page, settle
from tests.support.gpt2 import write_hf_gpt2
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.importers import import_model

PROMPT = "the heads attend to the world"


@pytest.fixture(scope="module")
def models_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    models = tmp_path_factory.mktemp("models")
    import_model(write_hf_gpt2(tmp_path_factory.mktemp("hf")), "hf", models / "tiny-bpe")
    with running_app(tmp_path_factory.mktemp("server"), {"ATTENTION_LAB_MODELS_DIR": str(models)}) as url:
        yield url, models / "tiny-bpe"


@pytest.mark.parametrize(
    ("scheme", "size"),
    [("light", {"width": 1280, "height": 720}), ("dark", {"width": 390, "height": 844})],
    ids=["light-1280", "dark-390"],
)
def test_an_imported_bpe_model_on_gpt_with_its_tokens(
    models_app: tuple[str, Path], browser: Browser, tmp_path: Path, scheme: str, size: dict
) -> None:
    url, folder = models_app
    tok = load_checkpoint(folder).tokenizer
    n_prompt = len(tok.encode(PROMPT))
    context = browser.new_context(viewport=size, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        link = f"{url}/gpt?checkpoint=tiny-bpe&text={PROMPT.replace(' ', '+')}&sampled=true"
        open_page(page, link, tmp_path / f"bpe-{scheme}.png")
        picker = page.get_by_role("combobox", name="Checkpoint")
        expect(picker).to_have_value(re.compile(r"tiny-bpe · 37\.1k parameters"))
        main = page.locator(part("main"))
        expect(main).to_contain_text("imported from Hugging Face (gpt2) · byte-level BPE, 300 tokens")
        expect(main).to_contain_text("Tracing the prompt and the 8 sampled tokens")
        chart_title(page, "gpt_self_head", "prompt + sample")
        pills = page.locator(part("pills")).get_by_role("radio")
        expect(pills).to_have_count(8)  # one per sampled token
        pills.nth(2).scroll_into_view_if_needed()
        pills.nth(2).focus()  # the keyboard: Space picks a sampled token
        page.keyboard.press("Space")
        settle(page, {"query": str(n_prompt + 1)}, tmp_path / f"bpe-picked-{scheme}.png")
        said = f"at position {n_prompt + 2} was drawn with p = "
        expect(page.get_by_text(re.compile(re.escape(said)))).to_be_visible()
        chart_title(page, "gpt_next", f"Next token after position {n_prompt + 1}")
        chart(page, "gpt_self_head").scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / f"bpe-maps-{scheme}.png"))
        assert_no_exception(page)
    finally:
        context.close()
