"""The /gpt page through Streamlit's AppTest, plus the pure helpers behind its panels."""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.explorers.explorer_html import contrast_ratio, text_colour
from attention_lab.models import explorer_compute
from attention_lab.models.compute import canonical, run_cached
from attention_lab.models.explorer_compute import lesson_head
from attention_lab.viewmodel import gpt as gpt_viewmodel
from tests.app.figures import charts, download_files, downloads, heatmaps, saved_runs, tables, texts
from tests.support.calls import count_calls
from transformer_core.config import InferenceOptions
from transformer_core.interp import distribution_shift, query_steps, record_arrays, softmax_allowed
from transformer_core.interp.generated import generated_window
from transformer_core.interp.trace import trace_gpt
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.stepping import SpecialTokens

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60
PROMPT = "The for statement"


def html_blocks(at: AppTest) -> str:
    return " ".join(str(h.proto.body) for h in at.get("html"))


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_gpt(query_params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("views/gpt.py")
    at.query_params = {"text": PROMPT, "max_new": "20", **(query_params or {})}
    return ok(at.run())


@pytest.fixture(scope="module")
def at() -> AppTest:
    return open_gpt()


def set_prompt(at: AppTest, text: str) -> AppTest:
    return ok(at.text_area(key="gpt_text").set_value(text).run())


# ---------------------------------------------------------------- page behaviour


def test_model_view_has_every_layer_and_head_on_the_prompt(at: AppTest) -> None:
    set_prompt(at, PROMPT)
    figs = charts(at)
    grid = heatmaps(figs["gpt_self_grid"])
    T = len(PROMPT)
    assert len(grid) == 4 * 4 and all(m.shape == (T, T) for m in grid)
    assert all(np.allclose(np.triu(m, 1), 0) for m in grid)  # causal
    assert all(np.allclose(m.sum(-1), 1, atol=1e-3) for m in grid)
    # one colour scale for every panel: weights 0..1, written with WEIGHT_DIGITS decimals
    spec = figs["gpt_self_grid"]
    assert (spec["zmin"], spec["zmax"], spec["digits"]) == (0.0, 1.0, 3)
    assert [(p["layer"], p["head"]) for p in spec["panels"]] == [(la, h) for la in range(4) for h in range(4)]
    layer, head_no = at.selectbox(key="gpt_layer").value, at.selectbox(key="gpt_head").value
    head = heatmaps(figs["gpt_self_head"])[0]
    assert np.allclose(head, grid[layer * 4 + head_no], atol=5e-5)  # the grid travels in steps of 1e-4
    labels = figs["gpt_self_head"]["x"]
    assert labels[:3] == ["T", "h", "e"] and labels[3] == "␣"


def test_a_new_prompt_walks_its_last_character_a_picked_one_stays_for_its_prompt(at: AppTest) -> None:
    """Issue 23 #1: the picker kept position 28 of the old prompt when a longer one came."""
    set_prompt(at, "abc")
    assert at.selectbox(key="gpt_query").value == 2
    set_prompt(at, "hello world, said the model")
    assert at.selectbox(key="gpt_query").value == 26
    at.selectbox(key="gpt_query").set_value(3).run()
    at.slider(key="gpt_temperature").set_value(0.5).run()  # another widget: the pick stays
    assert ok(at).selectbox(key="gpt_query").value == 3
    set_prompt(at, PROMPT)
    assert at.selectbox(key="gpt_query").value == len(PROMPT) - 1
    at.slider(key="gpt_temperature").set_value(0.8).run()


def shown_head(at: AppTest) -> tuple[int, int]:
    return at.selectbox(key="gpt_layer").value, at.selectbox(key="gpt_head").value


def test_the_page_opens_on_the_models_most_telling_head() -> None:
    """Issue 23: unless a link or the reader names one, the strongest previous-token or
    induction head (the /heads detectors); a new checkpoint opens on its own, a head the
    reader picked stays."""
    fresh = open_gpt()
    assert shown_head(fresh) == run_cached(lesson_head, "gpt-sinusoidal") == (0, 3)
    fresh.selectbox(key="gpt_checkpoint").set_value("gpt-induction").run()
    assert shown_head(ok(fresh)) == run_cached(lesson_head, "gpt-induction") == (1, 1)  # induction 0.79
    fresh.selectbox(key="gpt_layer").set_value(1)
    fresh.selectbox(key="gpt_head").set_value(0).run()
    fresh.selectbox(key="gpt_checkpoint").set_value("gpt-sinusoidal").run()
    assert shown_head(ok(fresh)) == (1, 0)
    assert shown_head(open_gpt({"layer": "0", "head": "0"})) == (0, 0)


def test_sampling_shows_tokens_with_probabilities_and_follows_the_seed(at: AppTest) -> None:
    set_prompt(at, PROMPT)
    at.slider(key="gpt_temperature").set_value(0.0).run()
    greedy = html_blocks(ok(at))
    assert "p = " in greedy and "most likely" in greedy
    at.number_input(key="gpt_seed").set_value(7).run()
    assert html_blocks(ok(at)) == greedy  # temperature 0 ignores the seed
    at.slider(key="gpt_temperature").set_value(1.5).run()
    hot7 = html_blocks(ok(at))
    at.number_input(key="gpt_seed").set_value(8).run()
    hot8 = html_blocks(ok(at))
    assert hot7 != greedy and hot8 != hot7
    at.number_input(key="gpt_seed").set_value(7).run()
    assert html_blocks(ok(at)) == hot7  # same seed, same sample
    at.slider(key="gpt_temperature").set_value(0.8)
    at.number_input(key="gpt_seed").set_value(0).run()


def test_text_colour_follows_the_background_luminance() -> None:
    """Issue 11 #9: sampled characters were black on dark blue."""
    blue = (37, 99, 235)
    assert text_colour(blue, 1.0) == "#ffffff"  # a certain character: the full blue
    assert text_colour(blue, 0.15) == "#000000"  # an unlikely one: pale shade over white
    for alpha in np.linspace(0, 1, 21):  # the better of black and white, and WCAG AA (4.5:1) on every shade
        shade = [alpha * c + (1 - alpha) * 255 for c in blue]
        ratios = {
            "#ffffff": contrast_ratio(shade, (255, 255, 255)),
            "#000000": contrast_ratio(shade, (0, 0, 0)),
        }
        assert ratios[text_colour(blue, alpha)] == max(ratios.values()) >= 4.5
    assert text_colour((0, 0, 0)) == "#ffffff" and text_colour((255, 255, 255)) == "#000000"
    assert text_colour((255, 235, 59)) == "#000000"  # yellow is light


def test_sampled_characters_carry_a_readable_text_colour(at: AppTest) -> None:
    import re

    set_prompt(at, PROMPT)
    at.slider(key="gpt_temperature").set_value(0.0).run()
    spans = re.findall(r"background:rgb\((\d+),(\d+),(\d+)\);color:(#[0-9a-f]{6})", html_blocks(ok(at)))
    assert spans
    for *shade, colour in spans:  # an opaque shade (it reads the same on a dark page) and its text
        text = (255, 255, 255) if colour == "#ffffff" else (0, 0, 0)
        assert contrast_ratio([int(c) for c in shade], text) >= 4.5
    at.slider(key="gpt_temperature").set_value(0.8).run()


def test_causal_mask_off_puts_weight_on_future_characters(at: AppTest) -> None:
    set_prompt(at, PROMPT)
    at.toggle(key="gpt_nocausal").set_value(True).run()
    figs = charts(ok(at))
    grid = heatmaps(figs["gpt_self_grid"])
    assert any(np.triu(m, 1).max() > 0.01 for m in grid)
    assert figs["gpt_self_grid"]["title"] == "Every head: self-attention (causal mask off), a layer per row"
    assert figs["gpt_self_head"]["description"].startswith("Self-attention (causal mask off), layer ")
    outline = figs["gpt_self_head"]["outline"]
    assert outline["name"] == "future position"
    assert all(k > q for q, k in outline["cells"])  # only cells right of the diagonal
    at.toggle(key="gpt_nocausal").set_value(False).run()
    assert charts(ok(at))["gpt_self_grid"]["title"] == "Every head: self-attention (causal), a layer per row"


def test_dropping_positions_changes_the_attention(at: AppTest) -> None:
    set_prompt(at, PROMPT)
    before = heatmaps(charts(at)["gpt_self_grid"])
    at.toggle(key="gpt_nopos").set_value(True).run()
    after = heatmaps(charts(ok(at))["gpt_self_grid"])
    assert any(not np.allclose(a, b, atol=1e-4) for a, b in zip(before, after, strict=True))
    at.toggle(key="gpt_nopos").set_value(False).run()


def test_ablating_a_head_reports_the_change_in_the_next_character(at: AppTest) -> None:
    set_prompt(at, PROMPT)
    assert not at.get("metric")
    at.multiselect(key="gpt_ablate").set_value(["0.0", "1.1"]).run()
    metrics = {m.label: m.value for m in ok(at).get("metric")}
    tv = float(metrics["Total variation"])
    assert 0 < tv <= 1
    assert float(metrics["KL(before ‖ after)"].split()[0]) > 0
    bars = charts(at)["gpt_next"]["series"]
    assert [b["name"] for b in bars] == ["all heads", "with ablation"]
    titles = [p["title"] for p in charts(at)["gpt_self_grid"]["panels"]]
    assert "L0 H0 (ablated)" in titles and "L1 H1 (ablated)" in titles
    assert at.query_params["ablate"] in ("0.0,1.1", ["0.0,1.1"])
    at.multiselect(key="gpt_ablate").set_value([]).run()


def test_step_by_step_panel_matches_the_head_view(at: AppTest) -> None:
    set_prompt(at, PROMPT)
    at.selectbox(key="gpt_layer").set_value(2)
    at.selectbox(key="gpt_head").set_value(1)
    at.selectbox(key="gpt_query").set_value(5).run()
    figs = charts(ok(at))
    row = heatmaps(figs["gpt_self_head"])[0][5]
    table = walk_to_the_end(at)  # as shown: weights to 3 decimals (as every tip writes them), scores to 4
    assert np.allclose(table["weight w"].to_numpy(dtype=float), row, atol=5e-4 + 6e-5)
    assert np.isneginf(table["masked s"].iloc[6:]).all() and (table["weight w"].iloc[6:] == 0).all()
    assert table["weight w"].sum() == pytest.approx(1.0, abs=1e-3)
    d_k = 128 // 4
    assert np.allclose(table[f"× 1/√{d_k}"], table["q·k"] / np.sqrt(d_k), atol=2e-4)
    assert [len(v) for v in heatmaps(figs["gpt_out"])] == [d_k]


def test_checkpoints_show_their_own_positional_steps(at: AppTest) -> None:
    set_prompt(at, PROMPT)
    at.selectbox(key="gpt_checkpoint").set_value("gpt-rope").run()
    figs = charts(ok(at))
    assert [t["name"] for t in figs["gpt_qvec"]["series"]] == ["q (before RoPE)", "q (after RoPE)"]
    rotated, raw = heatmaps(figs["gpt_kmat"])[0], heatmaps(figs["gpt_kraw"])[0]
    assert np.allclose(rotated[0], raw[0], atol=1e-5)  # position 0 is turned by angle 0
    assert not np.allclose(rotated[1:], raw[1:], atol=1e-3)
    at.selectbox(key="gpt_checkpoint").set_value("gpt-alibi").run()
    assert "+ ALiBi bias" in walk_to_the_end(at).columns
    at.selectbox(key="gpt_checkpoint").set_value("gpt-sinusoidal").run()
    assert [t["name"] for t in charts(ok(at))["gpt_qvec"]["series"]] == ["q"]
    assert "gpt_kraw" not in charts(at)


@pytest.mark.parametrize(
    ("text", "kind", "needle"),
    [("", "warning", "empty"), ("x" * 129, "error", "at most 128")],
)
def test_unusable_prompts_give_a_message_not_a_traceback(
    at: AppTest, text: str, kind: str, needle: str
) -> None:
    set_prompt(at, text)
    assert any(needle in s for s in texts(at, kind))
    assert not charts(at)
    set_prompt(at, PROMPT)


def test_emoji_in_the_prompt_are_replaced_and_listed(at: AppTest) -> None:
    set_prompt(at, "print(\U0001f600)")
    assert any("U+1F600" in s for s in texts(at, "warning"))
    labels = charts(at)["gpt_self_head"]["x"]
    assert "<unk>" in labels
    assert "\U0001f600" not in html_blocks(at)  # headless browsers have no emoji font
    set_prompt(at, PROMPT)


def test_a_deep_link_restores_the_view() -> None:
    at = open_gpt(
        {
            "checkpoint": "gpt-learned",
            "layer": "3",
            "head": "2",
            "query": "4",
            "nocausal": "true",
            "ablate": "1.3",
            "temperature": "0.5",
            "seed": "42",
        }
    )
    assert at.selectbox(key="gpt_checkpoint").value == "gpt-learned"
    assert at.text_area(key="gpt_text").value == PROMPT
    assert (at.selectbox(key="gpt_layer").value, at.selectbox(key="gpt_head").value) == (3, 2)
    assert at.selectbox(key="gpt_query").value == 4
    assert at.toggle(key="gpt_nocausal").value is True
    assert at.multiselect(key="gpt_ablate").value == ["1.3"]
    assert at.slider(key="gpt_temperature").value == 0.5 and at.number_input(key="gpt_seed").value == 42
    assert "Layer 3 head 2" in charts(at)["gpt_self_head"]["title"]
    assert at.query_params["checkpoint"] in ("gpt-learned", ["gpt-learned"])


def test_an_expired_run_in_a_link_is_explained_once(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A link naming a run this box no longer has: one notice that says why (the run is
    unknown or expired), not a second "Ignored from the link" naming the same value; another
    bad value in the same link is still named."""
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path))
    at = open_gpt({"checkpoint": "run-" + "0f" * 8, "layer": "99"})
    notices = [e.value for e in at.error] + [w.value for w in at.warning] + [i.value for i in at.info]
    assert sum("run-" + "0f" * 8 in n for n in notices) == 1, notices
    assert any("unknown or expired run" in e.value for e in at.error), notices
    assert any("layer=99" in n for n in notices), notices
    assert at.selectbox(key="gpt_checkpoint").value == "gpt-sinusoidal"


def test_downloads_hold_the_trace_the_command_line_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    files = download_files(monkeypatch, lambda: open_gpt({"checkpoint": "gpt-rope", "nocausal": "true"}))
    assert set(files) == {"Attention as JSON", "Attention as CSV"}
    data = json.loads(files["Attention as JSON"])
    ckpt = load_checkpoint("gpt-rope")
    cli = trace_gpt(ckpt.model, ckpt.tokenizer, PROMPT, InferenceOptions(causal=False)).to_json("gpt-rope")
    assert {k: data[k] for k in ("checkpoint", "input", "output", "tokens")} == {
        k: cli[k] for k in ("checkpoint", "input", "output", "tokens")
    }
    assert np.allclose(data["attention"]["self"], cli["attention"]["self"], atol=1e-6)
    assert data["options"] == {"causal": False, "positions": True, "ablate": []}
    table = pd.read_csv(io.StringIO(files["Attention as CSV"]), keep_default_na=False)
    T = len(PROMPT)
    assert len(table) == 4 * 4 * T * T and set(table["kind"]) == {"self"}
    row = table[(table.layer == 2) & (table["head"] == 1) & (table.query_index == 3) & (table.key_index == 9)]
    tokens = cli["tokens"]["source"]
    assert row["query_token"].item() == tokens[3] and row["key_token"].item() == tokens[9]
    assert row["weight"].item() == pytest.approx(cli["attention"]["self"][2][1][3][9], abs=1e-6)


def test_a_users_own_model_is_cached_by_its_weights_not_its_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Results are keyed by the weights' checksum, not by the name: a rerun of the same view
    reuses them, and so does a second run id holding the same weights."""
    mine, copy = "run-" + "a1" * 8, "run-" + "b2" * 8
    saved_runs(monkeypatch, tmp_path, "gpt-sinusoidal", mine, copy)
    calls = count_calls(monkeypatch, gpt_viewmodel, "gpt_page")
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    at.session_state["my_models"] = {run: {"label": "my gpt", "task": "lm"} for run in (mine, copy)}
    at.run()
    at.switch_page("views/gpt.py")
    at.query_params = {"checkpoint": mine, "text": PROMPT, "max_new": "10", "seed": "11"}
    ok(at.run())
    assert at.selectbox(key="gpt_checkpoint").value == mine
    assert len(heatmaps(charts(at)["gpt_self_grid"])) == 16
    n = len(calls)
    assert n == 1
    at.session_state["gpt_head"] = 3  # same text and options: from the cache
    ok(at.run())
    assert len(calls) == n
    at.session_state["gpt_checkpoint"] = copy  # another name, the same weights (AppTest cannot
    at.run()  # pick an option whose label the page formats)
    assert len(heatmaps(charts(ok(at))["gpt_self_grid"])) == 16 and len(calls) == n


# ---------------------------------------------------------------- pure helpers


@pytest.fixture(scope="module")
def alibi():
    return load_checkpoint("gpt-alibi")


def test_query_steps_reproduce_the_models_arithmetic(alibi) -> None:
    tr = trace_gpt(alibi.model, alibi.tokenizer, "def f(x):", InferenceOptions())
    rec = record_arrays(tr.capture["self.1"])
    s = query_steps(rec, head=2, query=6)
    assert s.bias is not None  # ALiBi
    assert np.allclose(s.scaled, s.dot / np.sqrt(s.q.shape[0]), atol=1e-5)
    assert np.allclose(s.scaled + s.bias, s.scores, atol=1e-4)  # score = q.k/sqrt(d) + bias
    assert np.allclose(softmax_allowed(s.scores, s.allowed), s.weights, atol=1e-5)
    assert not s.allowed[7:].any() and np.all(s.weights[7:] == 0)
    assert np.allclose(s.weights, tr.attention["self"][1, 2, 6])
    assert np.allclose(s.output, s.weights @ s.v)
    assert not s.rotated


def test_distribution_shift() -> None:
    p = np.array([0.5, 0.5, 0.0])
    assert distribution_shift(p, p) == (0.0, 0.0)
    tv, kl = distribution_shift(p, np.array([0.25, 0.25, 0.5]))
    assert tv == pytest.approx(0.5) and kl == pytest.approx(np.log(2))


def test_options_key_is_order_independent() -> None:
    a = InferenceOptions(ablate=(("self", 1, 2), ("self", 0, 3)))
    b = InferenceOptions(ablate=(("self", 0, 3), ("self", 1, 2)))
    assert canonical(a) == canonical(b) and a.ablate == frozenset({("self", 1, 2), ("self", 0, 3)})


def next_chart(at: AppTest) -> dict[str, tuple[list[str], np.ndarray]]:
    """The next-character chart's series: name -> (tick labels, values)."""
    spec = charts(at)["gpt_next"]
    return {t["name"]: (spec["x"], v) for t, v in zip(spec["series"], heatmaps(spec), strict=True)}


@pytest.mark.parametrize(
    ("temperature", "top_k", "top_p"), [(0.5, 0, 1.0), (1.5, 5, 1.0), (1.0, 0, 0.6), (0.0, 0, 1.0)]
)
def test_next_character_chart_shows_the_distribution_the_sampler_draws_from(
    temperature: float, top_k: int, top_p: float
) -> None:
    """Issue 11 #8: the chart ignored temperature, top-k and top-p. It now shows the model's
    softmax beside the filtered distribution, computed by generation.filter_logits itself."""
    import torch

    from transformer_core.generation import filter_logits

    at = open_gpt({"temperature": str(temperature), "top_k": str(top_k), "top_p": str(top_p)})
    series = next_chart(at)
    labels, model = series["model (softmax of the logits)"]
    _, sampled = series["sampled from"]
    ckpt = load_checkpoint("gpt-sinusoidal")
    with torch.no_grad():
        logits = ckpt.model(torch.tensor([ckpt.tokenizer.encode(PROMPT)]))[0, -1]
    want = filter_logits(logits, temperature, top_k or None, top_p if top_p < 1 else None).numpy()
    raw = torch.softmax(logits, -1).numpy()
    ids = [ckpt.tokenizer.token_labels(range(len(raw))).index(lab) for lab in labels]
    np.testing.assert_allclose(model, raw[ids], atol=2e-4)
    np.testing.assert_allclose(sampled, want[ids], atol=2e-4)
    assert sampled.sum() == pytest.approx(want.sum(), abs=1e-3)  # every drawable character is shown
    if temperature == 0:
        assert sampled.max() == pytest.approx(1.0) and int((want > 0).sum()) == 1
    if top_k:
        assert int((want > 0).sum()) == top_k
    caption = " ".join(texts(at, "caption"))
    assert f"{int((want > 0).sum())} of {len(raw)} characters can be drawn" in caption


def test_exports_carry_their_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 11 #12: the JSON held only the next character; file names said nothing; the
    grid's PNG was `plot-image.png`."""
    params = {
        "checkpoint": "gpt-rope",
        "layer": "1",
        "head": "2",
        "temperature": "0.5",
        "top_k": "5",
        "seed": "3",
    }
    at, offered = downloads(monkeypatch, lambda: open_gpt(params))
    files = {label: d.text for label, d in offered.items()}
    names = {label: d.file_name for label, d in offered.items()}
    assert names == {
        "Attention as JSON": "gpt_gpt-rope_L1H2_attention.json",
        "Attention as CSV": "gpt_gpt-rope_L1H2_attention.csv",
    }
    sample = json.loads(files["Attention as JSON"])["sample"]
    shown = explorer_compute.sample(
        load_checkpoint("gpt-rope"), PROMPT, 20, 0.5, 5, 1.0, 3, InferenceOptions()
    )
    assert sample["continuation"] == "".join(s.text for s in shown) and len(shown) == 20
    assert sample["text"] == PROMPT + sample["continuation"]
    assert sample["settings"] == {
        "max_new_tokens": 20,
        "temperature": 0.5,
        "top_k": 5,
        "top_p": None,
        "seed": 3,
    }
    figs = charts(at)  # each chart's PNG button saves `file`.png with the chart's title drawn in
    assert figs["gpt_self_grid"]["file"] == "gpt_gpt-rope_self_all_heads" and figs["gpt_self_grid"]["title"]
    assert figs["gpt_self_head"]["file"] == "gpt_gpt-rope_self_L1H2" and figs["gpt_self_head"]["title"]


def walk_table(at: AppTest) -> pd.DataFrame:
    return tables(at)["gpt_walk_table"]


def walk_to_the_end(at: AppTest) -> pd.DataFrame:
    """Next until the walk's last step (it opens on step 1); its table then."""
    while not at.button(key="gpt_walk_next").disabled:
        at.button(key="gpt_walk_next").click().run()
    return walk_table(ok(at))


def test_the_single_query_walk_steps_through_and_shows_masked_keys_as_minus_infinity() -> None:
    """Issue 11 (step-through): q·k -> scale -> mask -> softmax as numbered steps with
    Previous / Next; at the mask step the later keys' scores are −∞."""
    at = open_gpt({"query": "3"})
    assert list(walk_table(at).columns) == ["key", "q·k"]  # it opens on step 1
    assert any("Step 1 of 6" in m.value for m in at.markdown)
    steps = ["q·k", "× 1/√32", "score s", "masked s", "e^(s − max)", "weight w"]
    assert list(walk_to_the_end(at).columns) == ["key", *steps]
    at.button(key="gpt_walk_prev").click().run()
    at.button(key="gpt_walk_prev").click().run()
    walk = walk_table(ok(at))
    assert list(walk.columns)[-1] == "masked s"
    assert any("Step 4 of 6" in m.value for m in at.markdown)
    masked = walk["masked s"].to_numpy()
    assert np.isneginf(masked[4:]).all() and np.isfinite(masked[:4]).all()  # query 3 sees keys 0..3
    np.testing.assert_allclose(masked[:4], walk["score s"].to_numpy()[:4])
    for _ in range(6):
        if not at.button(key="gpt_walk_prev").disabled:
            at.button(key="gpt_walk_prev").click().run()
    assert list(walk_table(ok(at)).columns) == ["key", "q·k"]
    at.button(key="gpt_walk_next").click().run()
    assert list(walk_table(ok(at)).columns) == ["key", "q·k", "× 1/√32"]


# ---------------------------------------------------------------- attention over the sample (issue 24)

SAMPLED = {"text": "def f(x):", "max_new": "40", "sampled": "true"}


def test_the_toggle_traces_prompt_and_sample_in_every_view() -> None:
    """Issue 24: with `sampled` on, the grid, the large head and the walk cover the prompt and
    the 40 sampled characters, the dashed line where the sample starts."""
    at = open_gpt(SAMPLED)
    assert at.toggle(key="gpt_sampled").value
    figs = charts(at)
    T, start = 9 + 40, 9
    assert all(m.shape == (T, T) for m in heatmaps(figs["gpt_self_grid"]))
    assert heatmaps(figs["gpt_self_head"])[0].shape == (T, T)
    assert figs["gpt_self_grid"]["x_marker"]["at"] == figs["gpt_self_head"]["x_marker"]["at"] == start
    samples = run_cached(explorer_compute.sample, "gpt-sinusoidal", "def f(x):", 40, 0.8, 0, 1.0, 0, opts())
    assert figs["gpt_self_head"]["x"] == list("def␣f(x):") + [s.label for s in samples]
    walk = at.selectbox(key="gpt_query")  # its query list covers the sample; it opens on the query
    assert len(walk.options) == T and walk.value == start - 1  # that wrote the first sampled character
    assert len(figs["gpt_wbars"]["x"]) == T
    at.toggle(key="gpt_sampled").set_value(False).run()
    off = charts(ok(at))
    assert heatmaps(off["gpt_self_head"])[0].shape == (9, 9) and off["gpt_self_head"]["x_marker"] is None


def opts() -> InferenceOptions:
    return InferenceOptions()


def test_picking_a_sampled_character_explains_it() -> None:
    """Its query row is the position before it; the chart shows what it was drawn from."""
    at = open_gpt(SAMPLED)
    samples = run_cached(explorer_compute.sample, "gpt-sinusoidal", "def f(x):", 40, 0.8, 0, 1.0, 0, opts())
    picker = at.button_group(key="gpt_explain")  # the sample as characters to click
    assert picker.options == [f"{s.label} {9 + i}" for i, s in enumerate(samples)]  # character, position
    assert picker.value == 9  # positions 9..48, the first picked
    assert at.selectbox(key="gpt_query").value == 8  # and section 3 walks the query that wrote it
    position, sample = 13, samples[4]
    ok(picker.set_value(position).run())
    ok(at.toggle(key="gpt_sampled").set_value(False).run())
    ok(at.toggle(key="gpt_sampled").set_value(True).run())  # off and on: the pick stays
    assert at.button_group(key="gpt_explain").value == position
    assert at.selectbox(key="gpt_query").value == position - 1  # section 3 walks the query that predicted it
    said = " ".join(texts(at, "markdown"))
    assert f"at position {position} was drawn with p = {sample.prob:.3f} when position {position - 1}" in said
    assert sample.top[0][0] in said
    next_chart = charts(at)["gpt_next"]
    assert next_chart["title"] == f"Next character after position {position - 1}: it drew '{sample.label}'"
    ckpt = load_checkpoint("gpt-sinusoidal")
    text = "def f(x):" + "".join(s.text for s in samples)
    probs = explorer_compute.step_probs(ckpt, text, opts())[position - 1]
    drawn = ckpt.tokenizer.encode(sample.text)[0]
    shown = dict(zip(next_chart["x"], heatmaps(next_chart)[0], strict=True))
    assert shown[sample.label] == pytest.approx(probs[drawn], abs=1e-6)


def test_the_export_carries_the_generated_positions(monkeypatch: pytest.MonkeyPatch) -> None:
    files = download_files(monkeypatch, lambda: open_gpt(SAMPLED))
    data = json.loads(files["Attention as JSON"])
    assert data["generated_from"] == 9 and len(data["generated"]) == 40
    assert data["input"] == "def f(x):" + data["generated"] == data["sample"]["text"]
    assert np.array(data["attention"]["self"]).shape == (4, 4, 49, 49)
    assert len(data["tokens"]["source"]) == 49 and "dropped_characters" not in data


def test_a_sample_past_the_block_traces_its_last_128_characters_and_says_so() -> None:
    at = open_gpt({"text": "x" * 100, "max_new": "40", "sampled": "true"})
    grid = heatmaps(charts(at)["gpt_self_grid"])
    assert grid[0].shape == (128, 128) and charts(at)["gpt_self_grid"]["x_marker"]["at"] == 88
    assert any("more than this model's block of 128" in i.value for i in at.info)
    window = generated_window("abc", "defgh", 4)
    assert (window.text, window.generated_from, window.first_sample, window.dropped) == ("efgh", 0, 1, 4)


# ---------------------------------------------------------------- decoding: greedy and beam search


def continuation(at: AppTest) -> str:
    """The shaded continuation as the page shows it (the sampled text block's chips)."""
    block = next(h for h in html_blocks(at).split("</div>") if "most likely" in h)
    return "".join(html.unescape(t) for t in re.findall(r'border-radius:3px">(.*?)</span>', block))


def test_beam_search_writes_the_librarys_winner_and_shows_every_step() -> None:
    from transformer_core.beam import beam_search

    at = open_gpt({"decoding": "beam", "beam": "3", "alpha": "0.6", "sampled": "true"})
    ckpt = load_checkpoint("gpt-sinusoidal")
    ids = ckpt.tokenizer.encode(PROMPT)
    special = SpecialTokens(ckpt.tokenizer.stop_id, tuple(ckpt.tokenizer.never_sampled))
    result = beam_search(ckpt.model, ids, 3, 20, alpha=0.6, special=special)
    written = ckpt.tokenizer.decode(result.tokens)
    assert continuation(at) == written and len(written) == 20
    tree = next(h for h in at.get("html") if "lab-beam" in str(h.proto.body))
    body = str(tree.proto.body)
    assert body.count("<p>") == len(result.steps) == 20
    assert body.count('class="win"') == 20  # one outlined chip per step: the winner's path
    assert body.count("<i") == sum(len(s.kept) + len(s.finished) + len(s.pruned) for s in result.steps)
    assert f"log P {result.best.log_prob:.2f}" in " ".join(c.value for c in at.caption)
    head = charts(at)["gpt_self_head"]  # the maps trace prompt + the winner, as for a sample
    assert head["x"] == list(PROMPT.replace(" ", "␣")) + ckpt.tokenizer.token_labels(result.tokens)
    assert at.query_params["decoding"] == "beam" and at.query_params["beam"] == "3"


def test_width_one_is_greedy_and_greedy_ignores_the_sampling_settings() -> None:
    greedy = open_gpt({"decoding": "greedy", "temperature": "1.5", "seed": "9"})
    assert not greedy.get("slider") or all(s.key != "gpt_temperature" for s in greedy.slider)
    one = open_gpt({"decoding": "beam", "beam": "1"})
    plain = open_gpt({"temperature": "0"})
    assert continuation(greedy) == continuation(one) == continuation(plain) != ""


def test_a_bad_width_in_a_link_is_named_and_the_default_used() -> None:
    at = open_gpt({"decoding": "beam", "beam": "9"})
    assert at.slider(key="gpt_beam").value == 4
    assert any("beam" in w.value for w in at.warning), [w.value for w in at.warning]
    at = open_gpt({"decoding": "nonsense"})
    assert at.radio(key="gpt_decoding").value == "sample"


def test_a_prompt_that_fills_the_block_leaves_beam_search_no_room() -> None:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("views/gpt.py")
    at.query_params = {"text": "a" * 128, "decoding": "beam"}
    at.run()
    assert not at.exception
    assert any("no room" in e.value for e in at.error), [e.value for e in at.error]


def test_a_sliding_window_bands_every_map_and_moves_the_next_character() -> None:
    """Issue 39: W = 3 keeps each query's 3 most recent keys: every map of the grid is 0 further
    back, rows still sum to 1, the grid equals the library's banded trace, and the next
    character's distribution is shown before and after the window."""
    at = open_gpt({"window": "3"})
    maps = heatmaps(charts(at)["gpt_self_grid"])  # one (T, T) map per layer and head
    i, j = np.indices(maps[0].shape)
    for m in maps:
        assert np.all(m[i - j >= 3] == 0) and np.allclose(m.sum(-1), 1.0, atol=5e-4)
    ckpt = load_checkpoint("gpt-sinusoidal")
    options = InferenceOptions(sliding_window=3)
    banded = trace_gpt(ckpt.model, ckpt.tokenizer, PROMPT, options).attention["self"]
    assert np.allclose(maps[0], banded[0, 0], atol=1e-4)
    bars = charts(at)["gpt_next"]
    assert [b["name"] for b in bars["series"]] == ["full attention", "window 3"]
    assert float(next(m.value for m in at.metric if m.label == "Total variation")) > 0
    assert any("Sliding window **3**" in c.value for c in at.caption)
    assert at.query_params["window"] in ("3", ["3"])
    far = open_gpt({"window": "4000"})
    assert any("`window=4000` is past this model's 128 positions" in n.value for n in far.info)


def test_the_walk_ends_with_every_head_side_by_side_and_w_o() -> None:
    """Section 3's last step: the layer's heads at the query, concatenated, then W_O: the second
    row is the attention sublayer's own output at that position."""
    at = open_gpt({"layer": "1", "head": "2", "ablate": "1.3"})
    specs = charts(at)
    (heads,) = heatmaps(specs["gpt_heads_merged"])
    (mixed,) = heatmaps(specs["gpt_heads_mixed"])
    assert heads.shape == (4, 32) and mixed.shape == (2, 128)
    assert not heads[3].any()  # head 1.3 is ablated: it sends nothing
    assert np.allclose(mixed[0], heads.reshape(-1), atol=1e-4)  # concat: head 0's dimensions first
    ckpt = load_checkpoint("gpt-sinusoidal")
    proj = ckpt.model.blocks[1].self_attn.out_proj
    expected = proj.weight.detach().numpy() @ heads.reshape(-1) + proj.bias.detach().numpy()
    assert np.allclose(mixed[1], expected, atol=1e-3)


def test_value_weighted_maps_show_each_keys_share_of_what_it_sends() -> None:
    """The switch under the maps: every map of the grid becomes ||alpha_ij v_j W_O^h|| over its
    row's sum (Kobayashi et al. 2020), computed here from the library's capture, and the grid's
    title and tooltips say so; the walk below keeps the raw weights and ends on each key's share."""
    at = open_gpt({"weighted": "true"})
    grid = charts(at)["gpt_self_grid"]
    assert "value-weighted" in grid["title"] and grid["value_name"] == "share sent"
    maps = heatmaps(grid)
    ckpt = load_checkpoint("gpt-sinusoidal")
    capture = trace_gpt(ckpt.model, ckpt.tokenizer, PROMPT).capture
    for layer in range(4):
        record = capture[f"self.{layer}"]
        w_o = ckpt.model.blocks[layer].self_attn.out_proj.weight.detach()
        for head in range(4):
            sent = (record.v[0, head] @ w_o[:, head * 32 : (head + 1) * 32].T).norm(dim=-1)  # (T,)
            weighted = record.weights[0, head] * sent
            expected = (weighted / weighted.sum(-1, keepdim=True)).numpy()
            assert np.allclose(maps[layer * 4 + head], expected, atol=2e-4)
    assert any("**Value-weighted**" in c.value for c in at.caption)
    layer, head = at.selectbox(key="gpt_layer").value, at.selectbox(key="gpt_head").value
    walk = walk_to_the_end(at)
    assert list(walk.columns)[-2:] == ["weight w", "share sent"]
    w_o = ckpt.model.blocks[layer].self_attn.out_proj.weight.detach()
    v = capture[f"self.{layer}"].v[0, head]
    norms = (v @ w_o[:, head * 32 : (head + 1) * 32].T).norm(dim=-1).numpy()  # (T,): what each key sends
    w = walk["weight w"].to_numpy(dtype=float)
    assert np.allclose(walk["share sent"].to_numpy(dtype=float), w * norms / (w * norms).sum(), atol=2e-3)
    raw = heatmaps(charts(open_gpt())["gpt_self_grid"])
    assert not np.allclose(raw[0], maps[0], atol=1e-2)
