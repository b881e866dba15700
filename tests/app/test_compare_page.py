"""The /compare page through Streamlit's AppTest: two sides, one colour scale, their difference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.figures import charts, heatmaps, saved_runs, tables, texts

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 90
REVERSAL_LINK = {"a": "reverse-rope", "b": "reverse-none", "text": "attention"}


def open_compare(query_params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("views/compare.py")
    at.query_params = dict(query_params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def markdown(at: AppTest) -> str:
    return "\n".join(texts(at, "markdown"))


def per_head(at: AppTest) -> np.ndarray:
    found = tables(at)
    assert list(found)[0] == "cmp_per_head"
    return found["cmp_per_head"].to_numpy(dtype=float)  # as shown, 3 decimals


@pytest.fixture(scope="module")
def reversal() -> AppTest:
    return open_compare(REVERSAL_LINK)


def test_reversal_link_shows_both_outputs_and_rope_reverses_exactly(reversal: AppTest) -> None:
    md = markdown(reversal)
    assert "**A** writes `noitnetta` — the input reversed" in md
    b_line = next(line for line in md.splitlines() if line.startswith("**B** writes"))
    assert "noitnetta` — the input reversed" not in b_line  # no positions: it cannot reverse
    assert reversal.selectbox(key="cmp_kind").value == "cross"  # default kind for reversal


def test_both_grids_share_one_colour_scale_and_have_every_head(reversal: AppTest) -> None:
    figs = charts(reversal)
    scales = [(figs[f"cmp_{s}_grid"]["zmin"], figs[f"cmp_{s}_grid"]["zmax"]) for s in ("a", "b")]
    assert scales == [(0.0, 1.0), (0.0, 1.0)]  # both grids: weight 0..1
    assert figs["cmp_a_grid"]["colors"] == figs["cmp_b_grid"]["colors"]
    for side in ("a", "b"):
        maps = heatmaps(figs[f"cmp_{side}_grid"])
        assert len(maps) == 2 * 4
        assert all(m.shape[1] == len("attention") + 1 for m in maps)  # keys: the source + <eos>


def test_difference_map_is_b_minus_a_on_a_symmetric_diverging_scale(reversal: AppTest) -> None:
    figs = charts(reversal)
    a = heatmaps(figs["cmp_a_head"])[0]
    b = heatmaps(figs["cmp_b_head"])[0]
    d = heatmaps(figs["cmp_diff_head"])[0]
    tq, tk = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
    assert d.shape == (tq, tk)
    assert np.allclose(d, b[:tq, :tk] - a[:tq, :tk], atol=1e-5)
    assert np.abs(d).max() > 0.05  # the two models attend differently
    diff = figs["cmp_diff_head"]
    assert diff["zmin"] == -diff["zmax"] and diff["zmax"] >= np.abs(d).max() - 1e-6
    ticks = diff["y"]
    assert len(ticks) == tq
    table = per_head(reversal)
    assert table.shape == (2, 4) and (table > 0).all()


def test_outputs_of_different_lengths_are_compared_on_the_common_shape() -> None:
    # without its causal mask the rope model stops after "ol": its decoder maps are 3 x 3, A's 6 x 6
    at = open_compare({"a": "reverse-rope", "b_nocausal": "true", "text": "hello", "kind": "decoder_self"})
    assert "**A** writes `olleh` — the input reversed" in markdown(at)
    figs = charts(at)
    a, b = heatmaps(figs["cmp_a_head"])[0], heatmaps(figs["cmp_b_head"])[0]
    d = heatmaps(figs["cmp_diff_head"])[0]
    assert a.shape == (6, 6) and b.shape[0] < 6
    assert d.shape == b.shape
    assert np.allclose(d, b - a[: b.shape[0], : b.shape[1]], atol=1e-5)
    assert any("common" in s for s in texts(at, "info"))
    assert per_head(at).shape == (2, 4)


def test_gpt_with_scaling_off_on_side_b_changes_the_attention() -> None:
    at = open_compare({"a": "gpt-sinusoidal", "b_noscale": "true", "text": "The with statement"})
    assert at.selectbox(key="cmp_b").value == "gpt-sinusoidal"  # b defaults to a
    assert at.selectbox(key="cmp_kind").value == "self"
    assert "likeliest next characters" in markdown(at)
    figs = charts(at)
    d = heatmaps(figs["cmp_diff_head"])[0]
    assert d.shape == (len("The with statement"),) * 2
    assert np.abs(d).max() > 1e-3
    assert per_head(at).max() > 1e-3
    assert at.query_params["b_noscale"] in ("true", ["true"])


def test_same_model_same_settings_gives_an_all_zero_difference() -> None:
    at = open_compare({"a": "reverse-rope", "b": "reverse-rope", "text": "hello"})
    d = heatmaps(charts(at)["cmp_diff_head"])[0]
    assert d.shape == (len("hello") + 1, len("hello") + 1)
    assert not d.any()
    assert not per_head(at).any()


def test_different_architectures_give_a_clear_error() -> None:
    at = open_compare({"a": "reverse-rope", "b": "gpt-rope", "text": "hello"})
    errors = texts(at, "error")
    assert any("same architecture" in e for e in errors), errors
    assert not charts(at)


def test_unknown_checkpoint_and_bad_input_show_a_message() -> None:
    at = open_compare({"a": "reverse-nope", "b": "reverse-none", "text": "hello"})
    assert any("Ignored from the link" in w and "a=reverse-nope" in w for w in texts(at, "warning"))
    assert at.selectbox(key="cmp_a").value == "reverse-rope"  # a shipped one instead
    at.text_input(key="cmp_text").set_value("x" * 40).run()
    assert not at.exception
    assert any("at most" in e for e in texts(at, "error"))
    at.text_input(key="cmp_text").set_value("").run()
    assert not at.exception
    assert any("empty" in w for w in texts(at, "warning"))


def test_unknown_run_id_shows_a_message() -> None:
    at = open_compare({"a": "run-0123456789abcdef0123", "b": "reverse-none", "text": "hello"})
    errors = texts(at, "error")
    assert sum("cannot be opened" in e for e in errors) == 1, errors


def test_a_saved_run_compares_with_its_shipped_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run_id = "run-00112233445566778899"
    saved_runs(monkeypatch, tmp_path / "runs", "reverse-rope", run_id)
    at = open_compare({"a": run_id, "b": "reverse-rope", "text": "attention"})
    assert at.selectbox(key="cmp_a").value == run_id
    assert not heatmaps(charts(at)["cmp_diff_head"])[0].any()  # the same weights


def test_downloads_hold_both_traces_and_the_difference(monkeypatch: pytest.MonkeyPatch) -> None:
    """/compare's downloads: A and B as `trace --json` prints them (with their switches),
    B − A and the per-head table, under a name that says what was compared."""
    import io
    import json

    import pandas as pd

    from tests.app.figures import downloads
    from transformer_core.interp.trace import trace_seq2seq
    from transformer_core.io.checkpoint import load_checkpoint

    at, offered = downloads(monkeypatch, lambda: open_compare(REVERSAL_LINK))
    files = {label: d.text for label, d in offered.items()}
    names = {label: d.file_name for label, d in offered.items()}
    assert names["A, B and B − A as JSON"] == "compare_reverse-rope_vs_reverse-none_cross.json"
    data = json.loads(files["A, B and B − A as JSON"])
    for side, name in (("a", "reverse-rope"), ("b", "reverse-none")):
        ckpt = load_checkpoint(name)
        cli = trace_seq2seq(ckpt.model, ckpt.tokenizer, "attention").to_json(name)
        assert data[side]["checkpoint"] == name and data[side]["output"] == cli["output"]
        assert np.allclose(data[side]["attention"]["cross"], cli["attention"]["cross"], atol=1e-6)
        assert data[side]["options"]["causal"] is True
    a, b = (np.asarray(data[s]["attention"]["cross"]) for s in ("a", "b"))
    tq, tk = min(a.shape[2], b.shape[2]), min(a.shape[3], b.shape[3])
    np.testing.assert_allclose(
        data["difference"]["b_minus_a"], b[:, :, :tq, :tk] - a[:, :, :tq, :tk], atol=1e-5
    )
    np.testing.assert_allclose(data["difference"]["mean_abs_per_head"], per_head(at), atol=1e-3)
    table = pd.read_csv(io.StringIO(files["Mean |B − A| per head as CSV"]), index_col=0)
    np.testing.assert_allclose(table.to_numpy(), per_head(at), atol=5e-4)  # the page shows 3 decimals


def test_a_recurrent_baseline_beside_a_transformer_shows_how_each_reads_the_input() -> None:
    """Chapter 004's Bahdanau model beside reverse-rope: each answer, Bahdanau's one alignment map
    and the Transformer's most anti-diagonal cross-attention head; the GRU has no map."""
    from transformer_core.interp import anti_diagonal_scores
    from transformer_core.interp.trace import trace_seq2seq
    from transformer_core.io.checkpoint import load_checkpoint

    at = open_compare({"a": "reverse-rope", "b": "reverse-bahdanau", "text": "attention"})
    figs = charts(at)
    assert set(figs) == {"cmp_a_alignment", "cmp_b_alignment"}
    ckpt = load_checkpoint("reverse-bahdanau")
    cross = trace_seq2seq(ckpt.model, ckpt.tokenizer, "attention", max_new_tokens=11).attention["cross"]
    np.testing.assert_allclose(heatmaps(figs["cmp_b_alignment"])[0], cross[0, 0], atol=1e-6)
    rope = load_checkpoint("reverse-rope")
    scores = anti_diagonal_scores(
        trace_seq2seq(rope.model, rope.tokenizer, "attention").attention["cross"], 9
    )
    layer, head = np.unravel_index(int(scores.argmax()), scores.shape)
    assert f"cross-attention L{layer} H{head}" in figs["cmp_a_alignment"]["title"]
    gru = open_compare({"a": "reverse-gru", "b": "reverse-bahdanau", "text": "attention"})
    assert set(charts(gru)) == {"cmp_b_alignment"}
    assert any("No attention" in i.value for i in gru.info)


def test_a_sliding_window_on_one_side_bands_only_that_sides_self_attention() -> None:
    """One model, two settings: A with W = 2 in its self-attention, B without."""
    at = open_compare({"a": "gpt-rope", "b": "gpt-rope", "text": "The for statement", "a_window": "2"})
    figs = charts(at)
    banded, plain = heatmaps(figs["cmp_a_grid"]), heatmaps(figs["cmp_b_grid"])
    i, j = np.indices(banded[0].shape)
    assert all(np.all(m[i - j >= 2] == 0) for m in banded)
    assert any(np.any(m[i - j >= 2] > 0.01) for m in plain)
    assert at.number_input(key="cmp_a_window").value == 2 and at.number_input(key="cmp_b_window").value == 0
    assert at.query_params["a_window"] in ("2", ["2"])


def test_value_weighted_sides_show_what_each_key_sends_and_their_difference() -> None:
    """weighted=1: both sides' maps (and B − A) are each key's share of ||alpha v W_O|| as
    /reversal draws it, computed by hand from the captured v, alpha and W_O; the scores in the
    titles stay those of the weights."""
    import torch

    from transformer_core.interp import trace_seq2seq
    from transformer_core.io.checkpoint import load_checkpoint

    at = open_compare({**REVERSAL_LINK, "layer": "1", "head": "2", "weighted": "1"})
    figs = charts(at)
    assert at.toggle(key="cmp_weighted").value
    assert figs["cmp_a_grid"]["value_name"] == "share sent"
    sent = {}
    for side, name in (("a", "reverse-rope"), ("b", "reverse-none")):
        ckpt = load_checkpoint(name)
        tr = trace_seq2seq(ckpt.model, ckpt.tokenizer, "attention", max_new_tokens=len("attention") + 2)
        rec = next(r for r in tr.capture.records if r.kind == "cross" and r.layer == 1)
        w_o = ckpt.model.decoder[1].cross_attn.out_proj.weight.detach()  # (d_model, H * d_head)
        d_head = rec.v.shape[-1]
        w_o_h = w_o[:, 2 * d_head : 3 * d_head]  # head 2's columns
        alpha, v = rec.weights[0, 2], rec.v[0, 2]  # (Tq, Tk), (Tk, d_head)
        norms = torch.linalg.vector_norm(alpha[..., None] * (v @ w_o_h.T)[None], dim=-1)  # (Tq, Tk)
        sent[side] = (norms / norms.sum(-1, keepdim=True)).numpy()
        shown = heatmaps(figs[f"cmp_{side}_head"])[0]
        assert np.allclose(shown, sent[side], atol=1e-5)
    d = heatmaps(figs["cmp_diff_head"])[0]
    tq = min(sent["a"].shape[0], sent["b"].shape[0])
    assert np.allclose(d, sent["b"][:tq] - sent["a"][:tq], atol=1e-5)
    raw = open_compare({**REVERSAL_LINK, "layer": "1", "head": "2"})
    assert charts(raw)["cmp_a_grid"]["panels"][6]["title"] == figs["cmp_a_grid"]["panels"][6]["title"]


def test_two_gpts_show_where_each_keeps_position_in_the_opened_heads_geometry() -> None:
    """gpt-learned against gpt-rope and gpt-alibi: the learned table's keys hold position in the
    vectors, RoPE's only once rotated, ALiBi's nowhere (the numbers are /heads section 10's)."""
    from attention_lab.models.explorer_compute import head_geometry
    from transformer_core.io.checkpoint import load_checkpoint

    for b, rotated_gain in (("gpt-rope", True), ("gpt-alibi", False)):
        at = open_compare(
            {"a": "gpt-learned", "b": b, "text": "def f(x): return x", "layer": "1", "head": "0"}
        )
        r2 = tables(at)["cmp_geometry_r2"]
        assert list(r2.index) == ["A: gpt-learned", f"B: {b}"]
        assert {"cmp_a_geometry", "cmp_b_geometry"} <= set(charts(at))
        learned = head_geometry(load_checkpoint("gpt-learned"), 1, 0, False)[0]
        assert float(r2.loc["A: gpt-learned", "keys R², vectors"]) == pytest.approx(
            learned.r2_keys, abs=0.006
        )
        assert float(r2.loc["A: gpt-learned", "keys R², vectors"]) > 0.5  # position in the vectors
        assert float(r2.loc[f"B: {b}", "keys R², vectors"]) < 0.2  # none in the vectors
        scored = float(r2.loc[f"B: {b}", "keys R², as scored"])
        assert (scored > 0.3) if rotated_gain else (scored < 0.2)  # RoPE: in the rotation; ALiBi: nowhere
