"""The /reversal page through Streamlit's AppTest, plus the pure helpers it shows."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.charts import specs as lab_charts
from attention_lab.explorers.model_input import char_name, check_input
from attention_lab.frame.state import visible
from attention_lab.viewmodel import reversal as reversal_viewmodel
from tests.app.figures import charts, download_files, heatmaps, saved_runs, texts
from tests.support.calls import count_calls
from transformer_core.config import InferenceOptions
from transformer_core.interp import anti_diagonal_scores
from transformer_core.interp.attribution import weighted_attention
from transformer_core.interp.trace import trace_seq2seq
from transformer_core.io.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60


def open_reversal(query_params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("views/reversal.py")
    if query_params:
        at.query_params = dict(query_params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def set_text(at: AppTest, text: str) -> AppTest:
    at.text_input(key="rev_text").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def at() -> AppTest:
    return open_reversal()


# ---------------------------------------------------------------- page behaviour


def test_hello_is_reversed_by_the_sinusoidal_model(at: AppTest) -> None:
    assert at.selectbox(key="rev_checkpoint").value == "reverse-sinusoidal"
    set_text(at, "hello")
    assert any("olleh" in s and "Correct" in s for s in texts(at, "success"))
    assert at.query_params["text"] == ["hello"] or at.query_params["text"] == "hello"


def test_every_grid_has_layers_x_heads_maps_of_the_right_shape(at: AppTest) -> None:
    set_text(at, "hello")
    figs = charts(at)
    n = len("hello")
    expected = {key: (n + 1, n + 1) for key in ("rev_enc_grid", "rev_dec_grid", "rev_cross_grid")}
    for key, shape in expected.items():
        maps = heatmaps(figs[key])
        assert len(maps) == 2 * 4, key  # 2 layers x 4 heads
        assert all(m.shape == shape for m in maps), key
        assert all(np.allclose(m.sum(-1), 1, atol=1e-3) for m in maps), key  # rows are softmaxes
    # the large head is the selected one from the grid
    enc_grid = heatmaps(figs["rev_enc_grid"])  # the grid travels in steps of 1e-4 (charts.GRID_STEP)
    shown = at.selectbox(key="rev_layer").value * 4 + at.selectbox(key="rev_head").value
    assert np.allclose(heatmaps(figs["rev_enc_head"])[0], enc_grid[shown], atol=5e-5)


def test_cross_attention_titles_carry_the_anti_diagonal_score(at: AppTest) -> None:
    set_text(at, "attention")
    fig = charts(at)["rev_cross_grid"]
    titles = [p["title"] for p in fig["panels"]]
    assert len(titles) == 8 and all(" · " in t for t in titles)
    scores = [float(t.rsplit(" ", 1)[1]) for t in titles]
    # a trained reversal model has at least one head that reads the mirrored letter
    assert max(scores) > 0.5


def test_the_page_opens_on_the_most_anti_diagonal_head_unless_a_link_names_one() -> None:
    """Issue 23: the large map opened on layer 0 head 0 (0.27) while the caption named L1 H2."""
    fresh = open_reversal({"text": "attention"})
    scores = [float(p["title"].rsplit(" ", 1)[1]) for p in charts(fresh)["rev_cross_grid"]["panels"]]
    best = int(np.argmax(scores))
    assert (fresh.selectbox(key="rev_layer").value, fresh.selectbox(key="rev_head").value) == divmod(best, 4)
    assert f"**L{best // 4} H{best % 4}**" in " ".join(m.value for m in fresh.caption)
    assert charts(fresh)["rev_cross_head"]["title"].endswith(f"{max(scores):.2f}")
    named = open_reversal({"text": "attention", "layer": "0", "head": "0"})
    assert (named.selectbox(key="rev_layer").value, named.selectbox(key="rev_head").value) == (0, 0)


def test_selectors_pick_the_head_drawn_large(at: AppTest) -> None:
    set_text(at, "hello")
    at.selectbox(key="rev_layer").set_value(1)
    at.selectbox(key="rev_head").set_value(2).run()
    figs = charts(at)
    grid = heatmaps(figs["rev_cross_grid"])
    assert np.allclose(heatmaps(figs["rev_cross_head"])[0], grid[1 * 4 + 2], atol=5e-5)
    assert "Layer 1 head 2" in figs["rev_cross_head"]["title"]
    assert at.query_params["layer"] in ("1", ["1"]) and at.query_params["head"] in ("2", ["2"])
    at.selectbox(key="rev_layer").set_value(0)
    at.selectbox(key="rev_head").set_value(0).run()


def test_causal_mask_off_lets_the_decoder_see_the_future(at: AppTest) -> None:
    set_text(at, "hello")
    dec = heatmaps(charts(at)["rev_dec_grid"])
    assert all(np.allclose(np.triu(m, 1), 0) for m in dec)
    at.toggle(key="rev_nocausal").set_value(True).run()
    assert not at.exception
    figs = charts(at)
    dec = heatmaps(figs["rev_dec_grid"])
    assert any(np.triu(m, 1).max() > 0.01 for m in dec)
    # the future cells are outlined in the large head view
    outline = figs["rev_dec_head"]["outline"]
    assert outline["name"] == "future position" and outline["cells"]
    assert all(k > q for q, k in outline["cells"])  # right of the diagonal only
    at.toggle(key="rev_nocausal").set_value(False).run()


def test_padding_mask_keeps_pad_columns_at_exactly_zero(at: AppTest) -> None:
    set_text(at, "attention")
    at.text_input(key="rev_second").set_value("abc").run()
    row2 = heatmaps(charts(at)["rev_pad1"])[0]
    assert row2.shape == (10, 10)  # "attention" + EOS sets the batch width
    pad_cols = slice(4, 10)  # "abc" + EOS, then six <pad>
    assert np.all(row2[:4, pad_cols] == 0.0)
    at.toggle(key="rev_nopad").set_value(True).run()
    assert not at.exception
    row2 = heatmaps(charts(at)["rev_pad1"])[0]
    assert row2[:4, pad_cols].sum(-1).max() > 0.01
    at.toggle(key="rev_nopad").set_value(False).run()


def test_dropping_positions_changes_the_attention(at: AppTest) -> None:
    set_text(at, "hello")
    before = heatmaps(charts(at)["rev_cross_grid"])
    at.toggle(key="rev_nopos").set_value(True).run()
    assert not at.exception
    after = heatmaps(charts(at)["rev_cross_grid"])
    assert not all(a.shape == b.shape and np.allclose(a, b) for a, b in zip(before, after, strict=True))
    at.toggle(key="rev_nopos").set_value(False).run()


def test_capitals_are_lowercased_with_a_note(at: AppTest) -> None:
    set_text(at, "HeLLo")
    assert any("lowercased" in s and "hello" in s for s in texts(at, "info"))
    assert any("olleh" in s for s in texts(at, "success"))


@pytest.mark.parametrize(
    ("text", "kind", "needle"),
    [
        ("", "warning", "empty"),
        ("a" * 31, "error", "at most 30"),
    ],
)
def test_unusable_input_gives_a_message_not_a_traceback(
    at: AppTest, text: str, kind: str, needle: str
) -> None:
    set_text(at, "hello")
    set_text(at, text)
    assert any(needle in s for s in texts(at, kind))
    assert not charts(at)
    # issue 11 #11: the link keeps the last accepted input, never the rejected one
    assert at.query_params["text"] in ("hello", ["hello"])
    assert at.text_input(key="rev_text").value == text  # the box still shows what was typed


def test_emoji_and_unknown_characters_are_listed(at: AppTest) -> None:
    set_text(at, "ab1 \U0001f600")
    warning = " ".join(texts(at, "warning"))
    assert "U+1F600" in warning and "'1'" in warning and "space" in warning
    assert charts(at)["rev_cross_grid"]  # the page still runs with <unk> in place
    set_text(at, "hello")


def test_control_characters_are_named_never_echoed_raw(at: AppTest) -> None:
    """Issue 11 #10: BEL and ESC were shown raw in the page's messages."""
    set_text(at, "Ab\x07c\x1b")
    warning = " ".join(texts(at, "warning"))
    assert "U+0007" in warning and "U+001B" in warning
    shown = [
        s for kind in ("info", "warning", "success", "error", "caption", "markdown") for s in texts(at, kind)
    ]
    assert not [s for s in shown if "\x07" in s or "\x1b" in s]
    assert any("[U+0007]" in s for s in texts(at, "info"))  # the lowercased echo names them too
    set_text(at, "hello")


def test_visible_names_every_unprintable_character() -> None:
    assert visible("a\x07 b\x1b\n") == "a[U+0007] b[U+001B][U+000A]"
    assert visible("héllo wörld") == "héllo wörld"
    assert char_name("\x07") == "U+0007" and char_name("\x1b") == "U+001B"


def test_a_deep_link_restores_the_view() -> None:
    at = open_reversal(
        {
            "checkpoint": "reverse-rope",
            "text": "world",
            "layer": "1",
            "head": "3",
            "nocausal": "true",
            "second": "ab",
        }
    )
    assert at.selectbox(key="rev_checkpoint").value == "reverse-rope"
    assert at.text_input(key="rev_text").value == "world"
    assert at.selectbox(key="rev_layer").value == 1 and at.selectbox(key="rev_head").value == 3
    assert at.toggle(key="rev_nocausal").value is True
    assert at.text_input(key="rev_second").value == "ab"
    assert "layer 1 head 3" in charts(at)["rev_enc_head"]["title"]


def test_a_bad_deep_link_falls_back_to_defaults() -> None:
    at = open_reversal({"checkpoint": "no-such-model", "layer": "x", "head": "99", "text": "ok"})
    assert at.selectbox(key="rev_checkpoint").value == "reverse-sinusoidal"
    assert at.selectbox(key="rev_layer").value == 0 and at.selectbox(key="rev_head").value == 0


def test_downloads_hold_the_trace_the_command_line_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    files = download_files(monkeypatch, lambda: open_reversal({"text": "world", "nopos": "true"}))
    assert set(files) == {"Attention as JSON", "Attention as CSV"}
    data = json.loads(files["Attention as JSON"])
    ckpt = load_checkpoint("reverse-sinusoidal")
    cli = trace_seq2seq(
        ckpt.model,
        ckpt.tokenizer,
        "world",
        InferenceOptions(positions=False),
        max_new_tokens=len("world") + 2,
    ).to_json("reverse-sinusoidal")  # the page's budget
    assert {k: data[k] for k in ("checkpoint", "input", "output", "tokens")} == {
        k: cli[k] for k in ("checkpoint", "input", "output", "tokens")
    }
    for kind in ("encoder_self", "decoder_self", "cross"):
        assert np.allclose(data["attention"][kind], cli["attention"][kind], atol=1e-6), kind
    assert data["options"] == {"causal": True, "padding_mask": True, "positions": False}
    table = pd.read_csv(io.StringIO(files["Attention as CSV"]), keep_default_na=False)
    Ts, Tt = len(cli["tokens"]["source"]), len(cli["tokens"]["target"])
    assert len(table) == 2 * 4 * (Ts * Ts + Tt * Tt + Tt * Ts)
    cross = table[(table.kind == "cross") & (table.layer == 1) & (table["head"] == 2)]
    assert list(cross.key_token[:Ts]) == cli["tokens"]["source"]  # keys of cross-attention: the input
    assert set(cross.query_token) == set(cli["tokens"]["target"])
    weights = cross.weight.to_numpy().reshape(Tt, Ts)
    assert np.allclose(weights, cli["attention"]["cross"][1][2], atol=1e-6)


def test_a_users_own_model_is_cached_by_its_weights_not_its_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    mine, copy = "run-" + "c3" * 8, "run-" + "d4" * 8
    saved_runs(monkeypatch, tmp_path, "reverse-rope", mine, copy)
    calls = count_calls(monkeypatch, reversal_viewmodel, "reversal_page")
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    at.session_state["my_models"] = {run: {"label": "my reversal", "task": "reverse"} for run in (mine, copy)}
    at.run()
    at.switch_page("views/reversal.py")
    at.query_params = {"checkpoint": mine, "text": "hello"}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="rev_checkpoint").value == mine
    assert any("olleh" in s for s in texts(at, "success"))
    assert len(calls) == 1
    at.session_state["rev_checkpoint"] = copy  # another name, the same weights (AppTest cannot
    at.run()  # pick an option whose label the page formats)
    assert any("olleh" in s for s in texts(at, "success")) and len(calls) == 1
    at.selectbox(key="rev_checkpoint").set_value("reverse-sinusoidal").run()  # other weights
    assert not at.exception and len(calls) == 2


# ---------------------------------------------------------------- pure helpers


def test_anti_diagonal_score_is_one_for_a_perfect_mirror_and_small_when_flat() -> None:
    n = 5
    Tt, Ts = n + 1, n + 1  # SOS + output, text + EOS
    perfect = np.zeros((1, 2, Tt, Ts))
    for t in range(n):
        perfect[0, 0, t, n - 1 - t] = 1.0
    perfect[0, 0, n, n] = 1.0  # the EOS step looks at EOS
    perfect[0, 1] = 1.0 / Ts  # head 1 is flat
    scores = anti_diagonal_scores(perfect, n)
    assert scores.shape == (1, 2)
    assert scores[0, 0] == pytest.approx(1.0)
    assert scores[0, 1] == pytest.approx(1.0 / Ts)


def test_anti_diagonal_score_counts_only_decoded_rows_and_ignores_the_main_diagonal() -> None:
    diagonal = np.eye(4)[None, None]  # copying, not reversing
    assert anti_diagonal_scores(diagonal, 3)[0, 0] == pytest.approx(1 / 3)  # only the middle letter
    short = np.full((1, 1, 2, 6), 1 / 6)  # output shorter than the input: 2 rows only
    assert anti_diagonal_scores(short, 5)[0, 0] == pytest.approx(1 / 6)
    assert anti_diagonal_scores(np.zeros((2, 3, 1, 1)), 0).shape == (2, 3)


def test_check_input_reports_lowercasing_unknowns_and_limits() -> None:
    from transformer_core.io.data import reversal_tokenizer

    tok = reversal_tokenizer()
    c = check_input("HeLLo!", tok, 30, lowercase=True)
    assert (c.text, c.lowered, c.unknown, c.problem) == ("hello!", True, ["!"], None)
    assert "empty" in check_input("", tok, 30).problem
    assert "31 characters" in check_input("a" * 31, tok, 30).problem
    assert char_name("\U0001f600") == "U+1F600" and char_name(" ") == "space"


def test_a_grid_names_every_head_and_outlines_the_selected_one() -> None:
    """The canvas grid (charts.js) draws panels in order, outlines `selected`, and sends back
    {layer, head} of the panel clicked; the page then selects it (head_view.pick_head)."""
    spec = lab_charts.grid_spec(np.random.rand(2, 3, 4, 4), list("abcd"), list("abcd"), selected=(1, 2))
    assert [(p["layer"], p["head"], p["title"]) for p in spec["panels"]][-1] == (1, 2, "L1 H2")
    assert spec["columns"] == 3 and spec["selected"] == [1, 2] and spec["clickable"]
    assert len(lab_charts.values(spec)) == 6


def test_key_labels_turn_where_neighbours_would_run_together(at: AppTest) -> None:
    """#5: the large head's key labels read `n<eos>` (the last letter and <eos> overlapped);
    single characters, the GPT prompt's case, stay upright."""
    set_text(at, "attention")
    head = charts(at)["rev_cross_head"]
    assert head["x"][-1] == "<eos>"
    assert head["x_angle"] == -90
    upright = lab_charts.head_spec(np.eye(9), list("attention"), list("attention"))
    assert upright["x_angle"] == 0


def test_query_labels_thin_out_where_rows_are_tighter_than_the_font() -> None:
    """#5 in projector mode: a 29-character prompt in a 250 px head stacked its query labels
    on top of each other; every k-th row is labelled instead, 2 px more than the font apart."""
    tokens = list("The with statement is used to")
    roomy = lab_charts.head_spec(np.eye(29), tokens, tokens, height=500)
    assert roomy["y_every"] == 1 and roomy["y"] == tokens
    tight = lab_charts.head_spec(np.eye(29), tokens, tokens, height=250)
    step = tight["y_every"]  # charts.js labels rows 0, step, 2 * step, ...
    assert step > 1 and tight["tick_px"] == 11
    assert (250 - 75) / 29 * step >= 11 + 2  # the plot area's height per label; 11 px font


def test_every_grid_says_what_it_shows(at: AppTest) -> None:
    """#12: the grid's PNG (the camera saves the figure as drawn) had no title."""
    figs = charts(at)
    titles = {key: figs[key]["title"] for key in ("rev_cross_grid", "rev_dec_grid", "rev_enc_grid")}
    assert titles == {
        "rev_cross_grid": "Every head: cross-attention (output → input), a layer per row",
        "rev_dec_grid": "Every head: decoder self-attention (causal), a layer per row",
        "rev_enc_grid": "Every head: encoder self-attention, a layer per row",
    }


def test_key_vector_rows_stay_readable_and_the_figure_bounded() -> None:
    """#5: key-vector row labels were 7 px; growing the figure per row must stop somewhere (a
    200-character prompt), labelling every k-th row beyond it."""
    short = lab_charts.matrix_spec(np.ones((29, 32)), list("The with statement is used to"))
    assert short["height"] == 520 and short["y_every"] == 1 and short["tick_px"] == 12
    long = lab_charts.matrix_spec(np.ones((200, 32)), ["x"] * 200)
    assert long["height"] == 520 and (520 - 110) / 200 * long["y_every"] >= 12 + 2


def test_the_projector_mode_resizes_the_grids_without_tracing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cell size is the drawing's, not the view's: projected, the grid is shorter, the view
    is the one computed before."""
    calls = count_calls(monkeypatch, reversal_viewmodel, "reversal_page")
    at = open_reversal({"text": "projector"})
    before = charts(at)["rev_cross_grid"]
    at.session_state["present"] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    after = charts(at)["rev_cross_grid"]
    assert len(calls) == 1
    assert after["height"] < before["height"]
    assert after["panels"] == before["panels"]
    assert after["selected"] == before["selected"]


# ---------------------------------------------------------------- decoding: beam search and sampling


def test_beam_search_traces_the_librarys_winner_and_shows_its_steps() -> None:
    from transformer_core.interp.generated import trace_seq2seq_beam

    at = open_reversal({"text": "attention", "decoding": "beam", "beam": "3"})
    traced, fields, _ = trace_seq2seq_beam(load_checkpoint("reverse-sinusoidal"), "attention", 3)
    assert any(traced.output in s and "Correct" in s for s in texts(at, "success"))
    tree = str(next(h for h in at.get("html") if "lab-beam" in str(h.proto.body)).proto.body)
    steps = fields["beam"]["steps"]
    assert tree.count("<p>") == len(steps)
    assert tree.count("<i") == sum(len(s["kept"]) + len(s["finished"]) + len(s["pruned"]) for s in steps)
    assert "⏹" in tree  # the winner ends with EOS
    cross = heatmaps(charts(at)["rev_cross_grid"])[0]
    assert cross.shape == np.asarray(traced.attention["cross"][0, 0]).shape


def test_a_hot_sample_keeps_its_wrong_letters_visible() -> None:
    from transformer_core.generation import sample_seq2seq
    from transformer_core.io import encode_source

    ckpt = load_checkpoint("reverse-sinusoidal")
    source = encode_source(ckpt.tokenizer, ["attention"])[0].tolist()
    steps = sample_seq2seq(ckpt.model, source, 11, temperature=2.0, seed=3)
    written = ckpt.tokenizer.decode([s.token for s in steps])
    assert written != "noitnetta"  # this seed writes a wrong letter at this temperature
    at = open_reversal({"text": "attention", "decoding": "sample", "temperature": "2.0", "seed": "3"})
    assert any(f"the model wrote `{written}`" in s for s in texts(at, "warning"))
    at.number_input(key="rev_seed").set_value(3).run()  # the same seed: the same letters
    assert any(f"the model wrote `{written}`" in s for s in texts(at, "warning"))


def test_a_bad_decoding_in_a_link_falls_back_to_greedy() -> None:
    at = open_reversal({"text": "attention", "decoding": "best", "beam": "0"})
    assert at.radio(key="rev_decoding").value == "greedy"
    assert any("Correct" in s for s in texts(at, "success"))


# ---------------------------------------------------------------- chapter 004's recurrent baselines


def test_the_bahdanau_baseline_shows_its_one_alignment_map() -> None:
    at = open_reversal({"checkpoint": "reverse-bahdanau", "text": "attention"})
    ckpt = load_checkpoint("reverse-bahdanau")
    traced = trace_seq2seq(ckpt.model, ckpt.tokenizer, "attention", max_new_tokens=11)
    figs = charts(at)
    assert "rev_cross_grid" not in figs  # no layers, no heads: one map
    shown = heatmaps(figs["rev_bahdanau"])[0]
    np.testing.assert_allclose(shown, traced.attention["cross"][0, 0], atol=1e-6)
    np.testing.assert_allclose(shown.sum(axis=1), 1.0, atol=1e-5)  # one alignment row per output step
    score = anti_diagonal_scores(traced.attention["cross"], 9)[0, 0]
    assert f"anti-diagonal {score:.2f}" in figs["rev_bahdanau"]["title"]
    assert any("noitnetta" in s for s in texts(at, "success"))


def test_the_gru_baseline_says_there_is_nothing_to_attend_and_shows_its_context() -> None:
    at = open_reversal({"checkpoint": "reverse-gru", "text": "attention"})
    ckpt = load_checkpoint("reverse-gru")
    traced = trace_seq2seq(ckpt.model, ckpt.tokenizer, "attention", max_new_tokens=11)
    assert any("has no attention" in s for s in texts(at, "info"))
    bars = charts(at)["rev_context"]
    assert len(bars["x"]) == traced.context.size == ckpt.config.d_model
    assert not any(k.endswith("_grid") for k in charts(at))


def test_only_reversal_lists_the_baselines() -> None:
    at = open_reversal()
    assert {"reverse-gru", "reverse-bahdanau"} <= set(at.selectbox(key="rev_checkpoint").options)
    heads = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    heads.run()
    heads.switch_page("views/heads.py")
    heads.run()
    assert not {"reverse-gru", "reverse-bahdanau"} & set(heads.selectbox(key="heads_checkpoint").options)


def test_value_weighted_maps_of_every_kind() -> None:
    """The switch under section 1 redraws the cross, decoder and encoder maps as each key's share
    of ||alpha_ij v_j W_O^h|| in its row, from the library's capture; the scores stay the weights'."""
    at = open_reversal({"checkpoint": "reverse-rope", "text": "attention", "weighted": "true"})
    assert not at.exception
    specs = charts(at)
    ckpt = load_checkpoint("reverse-rope")
    capture = trace_seq2seq(ckpt.model, ckpt.tokenizer, "attention").capture
    sent = weighted_attention(ckpt.model, capture)
    grids = (("rev_cross_grid", "cross"), ("rev_dec_grid", "decoder_self"), ("rev_enc_grid", "encoder_self"))
    for key, kind in grids:
        grid = specs[key]
        assert "value-weighted" in grid["title"] and grid["value_name"] == "share sent"
        maps = heatmaps(grid)
        expected = sent[kind] / sent[kind].sum(-1, keepdims=True)
        assert np.allclose(np.stack(maps).reshape(expected.shape), expected, atol=2e-4)
    plain = open_reversal({"checkpoint": "reverse-rope", "text": "attention"})
    assert "value-weighted" not in charts(plain)["rev_cross_grid"]["title"]
    gru = open_reversal({"checkpoint": "reverse-bahdanau", "text": "attention", "weighted": "true"})
    assert not gru.exception  # no W_O to weigh by: the switch is not offered, the maps are the weights


def test_a_verdict_names_spaces_in_words_where_code_would_show_a_blank() -> None:
    """Five spaces typed as the input: the true reverse is five spaces, which an inline code span
    shows as an empty gap; the verdict says it in words, and the boxes mark what was not written."""
    from attention_lab.explorers.explorer_html import correctness_html
    from attention_lab.explorers.reversal_panels import said

    assert [said(t) for t in ("", " ", "     ", " a ")] == ["(nothing)", "1 space", "5 spaces", "` a `"]
    at = open_reversal({"text": "     "})
    verdicts = texts(at, "warning") + texts(at, "success")
    assert any("the true reverse is 5 spaces" in s or "Correct: 5 spaces" in s for s in verdicts), verdicts
    assert correctness_html("ab", "abc").count('title="no letter written here"') == 1
