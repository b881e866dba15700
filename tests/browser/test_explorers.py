"""The two explorer pages in a real browser: type, toggle, click a head, reopen a deep link."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

from attention_lab.frame.streamlit_dom import keyed, part
from tests.support.browser import (
    assert_no_exception,
    chart,
    chart_cells,
    chart_legend,
    chart_title,
    click_head,
    open_page,
    params,
    settle,
    wait_for_app,
)
from transformer_core.cli import main as cli_main


def main_text(page: Page) -> str:
    return page.locator(part("main")).inner_text()


def flip(page: Page, label: str, key: str, value: str, shot: Path) -> None:
    """Click a switch by its label and wait until the rerun has mirrored it into the URL."""
    page.get_by_text(label, exact=True).first.click()  # the switch, not a caption naming it
    settle(page, {key: value}, shot)


def type_into(page: Page, label: str, text: str, key: str, shot: Path, submit: str = "Enter") -> None:
    box = page.get_by_role("textbox", name=label, exact=True)
    box.fill(text)
    box.press(submit)
    settle(page, {key: text}, shot)


REVERSAL_INPUT = "Text to reverse (letters a–z, at most 30)"


def test_reversal_explorer(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/reversal", tmp_path / "reversal-open.png")
    assert "Reversal explorer" in main_text(page)

    type_into(page, REVERSAL_INPUT, "Hello", "text", tmp_path / "reversal-hello.png")
    body = main_text(page)
    assert "Correct" in body and "olleh" in body and "lowercased" in body

    for label, key in [
        ("Drop positional information", "nopos"),
        ("Decoder causal mask off", "nocausal"),
        ("Padding mask off", "nopad"),
    ]:
        flip(page, label, key, "true", tmp_path / f"reversal-{key}.png")
        assert page.get_by_role("switch", name=label).is_checked()
    chart_legend(page, "rev_dec_head", "future position")  # the red outlines are drawn

    # a click on the encoder grid's layer 1 / head 2 map opens that head everywhere
    click_head(page, "rev_enc_grid", layer=1, head=2)
    chart_title(page, "rev_enc_head", "Encoder layer 1 head 2")
    chart_title(page, "rev_cross_head", "Layer 1 head 2 · anti-diagonal")
    page.screenshot(path=str(tmp_path / "reversal-clicked.png"), full_page=True)

    # a student shouts "type an emoji!": a message, never a traceback (other bad input: AppTest)
    type_into(page, REVERSAL_INPUT, "emoji \U0001f600", "text", tmp_path / "reversal-emoji.png")
    assert "U+1F600" in main_text(page)


def test_reversal_deep_link_and_download(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(
        page,
        app_url + "/reversal?checkpoint=reverse-sinusoidal&text=world&layer=1&head=3&nocausal=true&second=ab",
        tmp_path / "reversal-deep-link.png",
    )
    reversal_box = page.get_by_role("textbox", name=REVERSAL_INPUT, exact=True)
    expect(reversal_box).to_have_value("world", timeout=20_000)
    expect(page.get_by_role("textbox", name="Second input for the batch", exact=True)).to_have_value("ab")
    expect(page.get_by_role("switch", name="Decoder causal mask off")).to_be_checked()
    expect(page.get_by_role("switch", name="Padding mask off")).not_to_be_checked()
    chart_title(page, "rev_dec_head", "Decoder layer 1 head 3")
    assert "dlrow" in main_text(page)

    with page.expect_download() as info:
        page.get_by_role("button", name="Attention as JSON").click()
    data = json.loads(Path(info.value.path()).read_text())
    assert info.value.suggested_filename == "reversal_reverse-sinusoidal_L1H3_world.json"
    assert data["checkpoint"] == "reverse-sinusoidal" and data["input"] == "world"
    assert data["tokens"]["source"] == list("world") + ["<eos>"]
    cross = data["attention"]["cross"]  # [layer][head][query][key]
    assert (len(cross), len(cross[0]), len(cross[0][0][0])) == (2, 4, 6)
    assert len(cross[0][0]) == len(data["tokens"]["target"])
    assert_no_exception(page)

    # the same layout and numbers as the command line's `trace --json`
    with redirect_stdout(io.StringIO()) as out:
        code = cli_main(["trace", "reverse-sinusoidal", "world", "--no-causal", "--json", "--device", "cpu"])
    assert code == 0
    cli = json.loads(out.getvalue())
    assert set(cli) <= set(data) and set(cli["attention"]) == set(data["attention"])
    assert data["tokens"]["source"] == cli["tokens"]["source"]
    assert np.allclose(data["attention"]["encoder_self"], cli["attention"]["encoder_self"], atol=1e-5)


def test_gpt_explorer(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/gpt?max_new=30", tmp_path / "gpt-open.png")
    assert "GPT explorer" in main_text(page)

    type_into(page, "Prompt", "def main():", "text", tmp_path / "gpt-prompt.png", submit="Control+Enter")
    assert params(page)["query"] == "10"  # the step-by-step panel starts at the last character
    assert "query : at position 10" in main_text(page)
    longer = "def main(): return the answer"  # a new prompt: the walk moves to its last character
    type_into(page, "Prompt", longer, "text", tmp_path / "gpt-longer.png", submit="Control+Enter")
    assert params(page)["query"] == str(len(longer) - 1)
    picker = page.get_by_role("combobox", name="Query character")
    expect(picker).to_have_value(f"position {len(longer) - 1}: r")

    for label, key in [("Drop positional information", "nopos"), ("Causal mask off", "nocausal")]:
        flip(page, label, key, "true", tmp_path / f"gpt-{key}.png")
    chart_legend(page, "gpt_self_head", "future position")

    ablate = page.locator(keyed("gpt_ablate"))
    for _ in range(2):  # a rerun landing as the list opens (a busy box) can close it: try again
        ablate.click()  # open the multiselect
        page.get_by_role("option", name="L1 H2").click()
        page.keyboard.press("Escape")
        try:
            expect(ablate).to_contain_text("L1 H2", timeout=5_000)
            break
        except AssertionError:
            wait_for_app(page)
    settle(page, {"ablate": "1.2"}, tmp_path / "gpt-ablate.png")
    assert "Total variation" in main_text(page)

    click_head(page, "gpt_self_grid", layer=2, head=3)
    chart_title(page, "gpt_self_head", "Layer 2 head 3")
    page.screenshot(path=str(tmp_path / "gpt-clicked.png"), full_page=True)

    box = page.get_by_role("textbox", name="Prompt", exact=True)
    box.fill("")
    box.press("Control+Enter")
    page.get_by_text("empty").first.wait_for()
    assert_no_exception(page)
    assert params(page)["text"] == longer  # the link keeps the last accepted prompt


def test_gpt_deep_link(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(
        page,
        app_url + "/gpt?checkpoint=gpt-rope&text=import%20os&layer=3&head=1&query=4"
        "&nocausal=true&temperature=0.5&seed=3&max_new=20",
        tmp_path / "gpt-deep-link.png",
    )
    expect(page.get_by_role("textbox", name="Prompt", exact=True)).to_have_value("import os", timeout=20_000)
    expect(page.get_by_role("switch", name="Causal mask off")).to_be_checked()
    chart_title(page, "gpt_self_head", "Layer 3 head 1")
    chart_legend(page, "gpt_qvec", "q (after RoPE)")
    p = params(page)
    assert (p["checkpoint"], p["query"], p["temperature"], p["seed"]) == ("gpt-rope", "4", "0.5", "3")


def test_gpt_temperature_changes_the_next_character_chart(page: Page, app_url: str, tmp_path: Path) -> None:
    """Issue 11 #8: moving the temperature slider redraws the distribution sampled from."""
    open_page(page, app_url + "/gpt?text=import%20o&temperature=1.5&max_new=10", tmp_path / "gpt-t15.png")
    chart_legend(page, "gpt_next", "sampled from")
    caption = page.locator(part("caption"), has_text="can be drawn").first
    assert "temperature 1.5" in caption.inner_text()
    thumb = page.get_by_role("slider", name="Temperature")
    thumb.focus()
    thumb.press("Home")  # all the way down: greedy
    settle(page, {"temperature": "0.0"}, tmp_path / "gpt-t0.png")
    caption = page.locator(part("caption"), has_text="can be drawn").first
    text = caption.inner_text()
    assert "greedy (temperature 0)" in text and "1 of " in text and "has 100%" in text


SAMPLED_LINK = "/gpt?text=def+f(x):&max_new=40&sampled=true"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize(
    "size", [{"width": 1280, "height": 720}, {"width": 390, "height": 844}], ids=["1280", "390"]
)
def test_gpt_traces_the_sample_and_explains_a_picked_character(
    browser: Browser, app_url: str, tmp_path: Path, scheme: str, size: dict
) -> None:
    """Issue 24: a link opens the maps over prompt + sample; a sampled character picked with
    the keyboard is explained (its query walks in section 3)."""
    context = browser.new_context(viewport=size, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, app_url + SAMPLED_LINK, tmp_path / f"sampled-{scheme}.png")
        expect(page.get_by_role("switch", name="Show attention over the sampled text too")).to_be_checked()
        if size["width"] == 390:  # the first row keeps the model and the prompt side by side (frame.present)
            row = page.locator(keyed("gpt_inputs"))
            model, prompt = (row.locator(part(p)).first.bounding_box() for p in ("selectbox", "text_area"))
            assert model and prompt and abs(model["y"] - prompt["y"]) < 5 and model["x"] < prompt["x"]
        chart_title(page, "gpt_self_head", "prompt + sample")
        assert "Tracing the prompt and the 40 sampled characters" in main_text(page)
        assert len(chart_cells(page, "gpt_self_grid")) == 16
        pills = page.locator(part("pills")).get_by_role("radio")
        expect(pills).to_have_count(40)  # one per sampled character, positions 9..48
        pills.nth(13 - 9).scroll_into_view_if_needed()
        pills.nth(13 - 9).focus()  # the keyboard: a pill is a radio button, Space picks it
        page.keyboard.press("Space")
        settle(page, {"query": "12"}, tmp_path / f"sampled-picked-{scheme}.png")
        said = page.get_by_text(re.compile(r"at position 13 was drawn with p = 0\.\d{3} when position 12"))
        expect(said).to_be_visible()
        chart_title(page, "gpt_next", "Next character after position 12")
        page.get_by_text("Every head at once").scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path / f"sampled-maps-{scheme}.png"))
        chart(page, "gpt_self_head").screenshot(path=str(tmp_path / f"sampled-head-{scheme}.png"))
        assert_no_exception(page)
    finally:
        context.close()


def test_a_chart_whose_script_cannot_load_says_so(page: Page, app_url: str, tmp_path: Path) -> None:
    """The charts' drawing script comes from app/static; if it cannot be fetched (a proxy
    that drops the path, a network hiccup) each chart says so instead of staying blank."""
    page.route("**/app/static/charts.js*", lambda route: route.abort())
    open_page(page, app_url + "/reversal?text=abc", tmp_path / "no-chart-script.png")
    note = page.get_by_text("This chart could not be drawn").first
    expect(note).to_be_visible(timeout=30_000)
    assert "Reload the page" in note.inner_text()
    assert page.locator(".lab-chart[data-drawn]").count() == 0


BEAM_LINK = "/gpt?text=The+for+statement&decoding=beam&beam=3&max_new=20&sampled=true"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize(
    "size", [{"width": 1280, "height": 720}, {"width": 390, "height": 844}], ids=["1280", "390"]
)
def test_the_beam_tree_shows_every_step_and_follows_the_width_set_by_keyboard(
    browser: Browser, app_url: str, tmp_path: Path, scheme: str, size: dict
) -> None:
    context = browser.new_context(viewport=size, color_scheme=scheme)
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        open_page(page, app_url + BEAM_LINK, tmp_path / f"beam-{scheme}.png")
        tree = page.get_by_role("region", name="Every step of the beam search, width 3")
        tree.scroll_into_view_if_needed()
        expect(tree.locator("p")).to_have_count(20)
        expect(tree.locator("i.win")).to_have_count(20)  # the winner's path: one chip a step
        chart_title(page, "gpt_self_head", "prompt + sample")  # the maps trace the winner
        tree.screenshot(path=str(tmp_path / f"beam-tree-{scheme}.png"))
        tree.focus()  # the tree scrolls with the keyboard
        page.keyboard.press("End")
        page.wait_for_function(
            "() => { const r = document.querySelector('.lab-beam'); return r && r.scrollTop > 0; }"
        )
        width = page.get_by_role("slider", name="Beam width")
        width.focus()
        page.keyboard.press("ArrowRight")
        settle(page, {"beam": "4"}, tmp_path / f"beam-4-{scheme}.png")
        expect(page.get_by_role("region", name="Every step of the beam search, width 4")).to_be_attached()
        assert_no_exception(page)
    finally:
        context.close()


def test_the_reversal_beam_search_and_a_hot_sample(page: Page, app_url: str, tmp_path: Path) -> None:
    open_page(page, app_url + "/reversal?text=attention&decoding=beam&beam=2", tmp_path / "rev-beam.png")
    tree = page.get_by_role("region", name="Every step of the beam search, width 2")
    expect(tree).to_be_visible()
    assert "⏹" in tree.inner_text()
    page.get_by_role("button", name="Decoding: beam search, width 2").click()  # the popover
    page.get_by_text("Sample", exact=True).click()
    settle(page, {"decoding": "sample"}, tmp_path / "rev-sample.png")
    temperature = page.get_by_role("slider", name="Temperature")
    if not temperature.is_visible():  # the popover closed when its label changed: open it again
        page.get_by_role("button", name="Decoding: sample at 1").click()
    expect(temperature).to_be_visible()
    assert_no_exception(page)


def switch_on_weighted(page: Page, url: str) -> None:
    """Open the page and switch the maps to value-weighted from the keyboard alone."""
    open_page(page, url)
    page.get_by_role("switch", name="Value-weighted: what each key sends").focus()
    page.keyboard.press("Space")
    settle(page, {"weighted": "true"})


def test_value_weighted_maps_from_the_keyboard(page: Page, app_url: str) -> None:
    """/reversal's switch under section 1, then /gpt's under its maps: each redraws its grids as
    what every key sends, and says so in the grid's title."""
    switch_on_weighted(page, app_url + "/reversal")
    chart_title(page, "rev_cross_grid", "value-weighted")
    chart_title(page, "rev_enc_grid", "value-weighted")
    switch_on_weighted(page, app_url + "/gpt")
    chart_title(page, "gpt_self_grid", "value-weighted attention")
