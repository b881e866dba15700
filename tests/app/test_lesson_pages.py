"""The three lesson pages run headless (AppTest) with the worked numbers on screen.

Each test opens the real router (app/Home.py), switches to the page, and reads the numbers
the page shows; widgets are driven the way a user would, and deep links through the URL.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from attention_lab.charts.specs import WEIGHT_DIGITS, values
from tests.app.figures import charts, tables

ROOT = Path(__file__).resolve().parents[2]
HOME = str(ROOT / "app" / "Home.py")


@pytest.fixture(autouse=True)
def _cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_DEVICE", "cpu")


def open_view(page: str, **params: object) -> AppTest:
    at = AppTest.from_file(HOME, default_timeout=60)
    at.run()  # the router's first page (home), then the link: home drops parameters it does not read
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.switch_page(f"views/{page}.py").run()
    assert_ok(at)
    return at


def assert_ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def table(at: AppTest, *columns: str) -> pd.DataFrame:
    """The first table on the page (attention_lab.frame.tables, as the numbers on screen) that has all
    these columns."""
    for frame in tables(at).values():
        if set(columns) <= set(frame.columns):
            return frame
    raise AssertionError(f"no table with columns {columns}")


def metric(at: AppTest, label_start: str) -> str:
    for m in at.metric:
        if m.label.startswith(label_start):
            return m.value
    raise AssertionError(f"no metric starting {label_start!r}: {[m.label for m in at.metric]}")


def figure_titles(at: AppTest) -> list[str]:
    """Titles of every chart on the page."""
    return [spec["title"] for spec in charts(at).values()]


def figure_specs(at: AppTest) -> dict[str, dict]:
    """Every chart on the page as sent (attention_lab.charts.specs specs), by element key."""
    return charts(at)


def test_basics_shows_the_worked_numbers() -> None:
    at = open_view("basics")
    qkv = table(at, "token", "weight")
    seed = [0.0087, 0.0388, 0.1738, 0.7788]  # the chapter's weights; shown with WEIGHT_DIGITS decimals
    assert qkv["weight"].tolist() == np.round(seed, WEIGHT_DIGITS).tolist()
    assert any("(0.5718, 0.6019)" in m.value for m in at.markdown)
    masked = table(at, "k0", "k3")
    assert masked.round(4).values.tolist() == [[0.731, 0.269, 0.0, 0.0], [0.204, 0.612, 0.184, 0.0]]
    assert metric(at, "Gaussian prediction") == "103.753"
    assert metric(at, "Boxcar prediction") == "120.000"
    kernel = table(at, "Gaussian weight", "boxcar weight")
    assert kernel["boxcar weight"].tolist() == [0, 1, 0, 0, 0, 0]
    outputs = tables(at)["basics_mat_out"]
    assert outputs.round(4).values.tolist() == [[5.3535, 4.6465], [3.5475, 6.4525]]
    concat = table(at, "out0", "out3")
    assert concat.round(4).iloc[0].tolist() == [1.6477, 0.1786, 0.75, 0.25]
    assert float(metric(at, "largest difference")) < 1e-9
    assert at.success and "order is invisible" in at.success[0].value


def test_basics_widgets_change_the_numbers() -> None:
    at = open_view("basics")
    at.number_input(key="basics_q").set_value(0.0).run()
    assert_ok(at)
    assert table(at, "token", "weight")["weight"].tolist() == [0.25] * 4  # all scores 0
    at.slider(key="basics_len1").set_value(4).run()
    assert table(at, "k0", "k3").iloc[0].tolist() == [0.610, 0.225, 0.083, 0.083]  # 0.6103, 0.2245, 0.0826
    at.slider(key="basics_house").set_value(7.5).run()
    assert metric(at, "Boxcar prediction") == "none"  # no house within 1 of 7.5
    at.slider(key="basics_sigma").set_value(5.0).run()
    assert abs(float(metric(at, "Gaussian prediction")) - 103.753) > 1
    at.segmented_control(key="basics_batch").set_value(2).run()
    outputs = tables(at)["basics_mat_out"]
    assert outputs.round(4).values.tolist() == [[8.9449, 8.9449], [7.9987, 7.9464]]
    at.radio(key="basics_heads").set_value(4).run()
    assert len([t for t in figure_titles(at) if t.startswith("head ")]) == 4
    specs = charts(at)  # the heads share 0..1: one colour bar, on the last map
    assert [specs[f"basics_head_fig_{h}"]["colorbar"] is not None for h in range(4)] == [False] * 3 + [True]
    at.toggle(key="basics_positions").set_value(True).run()
    assert_ok(at)
    assert float(metric(at, "largest difference")) > 1e-3 and not at.success
    at.button[0].click().run()  # shuffle: another order
    assert_ok(at)
    assert at.selectbox(key="basics_perm").value != "0,3,2,1"
    assert at.query_params["q"] == "0.0" and at.query_params["positions"] == "true"


def test_basics_deep_link_and_bad_links() -> None:
    at = open_view("basics", q="2.5", k4="-1", house="3", heads="1")
    assert at.number_input(key="basics_q").value == 2.5
    weights = table(at, "token", "weight")["weight"]
    assert weights.idxmax() == 2  # key 2.0 now gives the largest score
    assert at.slider(key="basics_house").value == 3.0
    bad = open_view("basics", q="abc", sigma="99", perm="junk", heads="3", len1="nan", batch="7")
    assert bad.number_input(key="basics_q").value == 1.5
    assert bad.slider(key="basics_sigma").value == 1.0
    assert bad.selectbox(key="basics_perm").value == "0,3,2,1"
    assert metric(bad, "Gaussian prediction") == "103.753"


def masked_softmax(scores: np.ndarray, lens: tuple[int, int]) -> np.ndarray:
    """Each row's softmax over its first `len` keys, zero on the padding."""
    out = np.zeros_like(scores)
    for r, n in enumerate(lens):
        e = np.exp(scores[r, :n] - scores[r, :n].max())
        out[r, :n] = e / e.sum()
    return out


def test_basics_score_inputs_drive_the_masked_softmax_and_the_url() -> None:
    from attention_lab.lessons.basics import PADDED_SCORES, PADDED_VALID_LENS

    at = open_view("basics")
    masked = tables(at)["basics_masked_table"]
    assert list(masked.index) == ["row 1", "row 2"] and list(masked.columns) == ["k0", "k1", "k2", "k3"]
    scores = np.array(PADDED_SCORES, dtype=float)
    assert masked.values.tolist() == masked_softmax(scores, PADDED_VALID_LENS).round(WEIGHT_DIGITS).tolist()
    at.number_input(key="basics_s21").set_value(-1.5).run()  # row 2, key 1
    assert_ok(at)
    scores[1, 1] = -1.5
    expected = masked_softmax(scores, PADDED_VALID_LENS).round(WEIGHT_DIGITS)
    masked = tables(at)["basics_masked_table"]
    assert masked.values.tolist() == expected.tolist()
    assert masked.loc["row 1"].tolist() == [0.731, 0.269, 0.0, 0.0]  # the other row is unchanged
    assert at.query_params["s21"] == "-1.5" and at.query_params["s10"] == "2.0"
    at.number_input(key="basics_s13").set_value(9.0).run()  # padding of row 1: still 0 weight
    assert tables(at)["basics_masked_table"].loc["row 1"].tolist() == [0.731, 0.269, 0.0, 0.0]
    assert at.query_params["s13"] == "9.0"
    linked = open_view("basics", s21="-1.5", len2="2")
    assert linked.number_input(key="basics_s21").value == -1.5
    assert (
        tables(linked)["basics_masked_table"].values.tolist()
        == masked_softmax(scores, (2, 2)).round(WEIGHT_DIGITS).tolist()
    )
    bad = open_view("basics", s12="abc", s20="99", s11="nan")
    assert bad.number_input(key="basics_s12").value == PADDED_SCORES[0][2]
    assert bad.number_input(key="basics_s20").value == PADDED_SCORES[1][0]
    assert bad.number_input(key="basics_s11").value == PADDED_SCORES[0][1]
    assert bad.warning and all(f"`{p}" in bad.warning[0].value for p in ("s12=abc", "s20=99", "s11=nan"))
    assert tables(bad)["basics_masked_table"].values.tolist() == [
        [0.731, 0.269, 0.0, 0.0],
        [0.204, 0.612, 0.184, 0.0],
    ]


def test_positions_shift_rope_and_alibi() -> None:
    at = open_view("positions", d_model=64, length=50, dims="3,5")
    assert at.multiselect(key="positions_dims").value == ["3", "5"]
    assert at.slider(key="positions_d_model").value == 64 and at.slider(key="positions_length").value == 50
    assert float(metric(at, "max |M·PE(p) − PE(p+Δ)|")) < 1e-6
    rope = table(at, "RoPE score", "added sinusoid score")
    assert (rope["offset m − n"] == 3).all()
    assert rope["RoPE score"].max() - rope["RoPE score"].min() < 1e-5
    assert rope["added sinusoid score"].max() - rope["added sinusoid score"].min() > 0.1
    for offset in (-25, 1, 17):
        at.slider(key="positions_offset").set_value(offset).run()
        assert_ok(at)
        assert float(metric(at, "max |M·PE(p) − PE(p+Δ)|")) < 1e-6
    shift = table(at, "PE(10)", "PE(27)")
    assert (shift["M·PE(10)"] - shift["PE(27)"]).abs().max() < 1e-3
    at.slider(key="positions_rope_offset").set_value(-4).run()
    rope = table(at, "RoPE score")
    assert (rope["offset m − n"] == -4).all() and rope["RoPE score"].max() - rope["RoPE score"].min() < 1e-5
    at.slider(key="positions_alibi_heads").set_value(6).run()  # not a power of two
    assert_ok(at)
    assert at.selectbox(key="positions_alibi_head").options == [str(h) for h in range(6)]
    at.slider(key="positions_d_model").set_value(4).run()
    assert_ok(at)
    assert at.multiselect(key="positions_dims").value == ["3"]  # dimension 5 no longer exists
    assert at.query_params["d_model"] == "4" and at.query_params["offset"] == "17"
    assert at.query_params["dims"] == "3"


def test_positions_bad_link_and_learned_table() -> None:
    at = open_view("positions", d_model=33, length=9999, alibi_head=15, alibi_heads=4, rope_x=0, rope_y=0)
    assert at.slider(key="positions_d_model").value == 64 and at.slider(key="positions_length").value == 50
    assert at.selectbox(key="positions_alibi_head").value == 0
    assert any("zero vector" in i.value for i in at.info)
    assert at.selectbox(key="positions_learned_model").options[0] == "reverse-learned"
    assert metric(at, "rows in the table") == "32"
    assert metric(at, "positions seen in training") == "11"


def test_variance_table_and_sliders() -> None:
    at = open_view("variance")
    var = table(at, "d_k", "variance of q·k")
    assert var["d_k"].tolist() == [4, 16, 64, 256]
    for _, row in var.iterrows():
        assert abs(row["variance of q·k"] / row["d_k"] - 1) < 0.1
        assert abs(row["variance of q·k / √d_k"] - 1) < 0.1
    at.slider(key="variance_d_k").set_value(128).run()
    assert_ok(at)
    var = table(at, "d_k")
    assert var["d_k"].tolist() == [4, 16, 64, 128, 256]
    assert var[""].tolist() == ["", "", "", "◀ the slider's d_k", ""]  # the row the page is on, marked
    assert any(t.startswith("d_k = 128") for t in figure_titles(at))
    row = table(at, "unscaled", "scaled")
    assert row.loc["largest weight", "unscaled"] > row.loc["largest weight", "scaled"]
    assert row.loc["entropy (nats)", "unscaled"] < row.loc["entropy (nats)", "scaled"]
    at.slider(key="variance_eps").set_value(0.2).run()
    assert metric(at, "probability on the true class") == "0.8200"
    assert at.query_params["d_k"] == "128" and at.query_params["eps"] == "0.2"


def test_the_variance_tables_cached_rows_are_the_lessons_own_and_a_moved_slider_draws_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A page moved to a new d_k draws its pairs once: for the histogram, whose draw the table's
    new row reads; every other row is kept. Each row is the lesson's own number, to the bit."""
    from attention_lab.lesson_pages import lesson_views
    from attention_lab.lessons import variance

    first = lesson_views.score_variance_table((4, 16, 64, 256, 300), 1700)
    draws = []
    randn = torch.randn
    monkeypatch.setattr(torch, "randn", lambda *a, **k: draws.append(a) or randn(*a, **k))
    lesson_views.score_histograms(301, 1700)  # the page draws its histogram first
    second = lesson_views.score_variance_table((4, 16, 64, 256, 301), 1700)
    assert draws == [(1700, 301), (1700, 301)]  # q and k of the new d_k, once
    for got, dims in ((first, (4, 16, 64, 256, 300)), (second, (4, 16, 64, 256, 301))):
        want = variance.score_variance_table(dims, 1700)
        assert np.array_equal(got.raw, want.raw) and np.array_equal(got.scaled, want.scaled)


def test_t5_bias_charts_are_kept_per_model_and_span() -> None:
    from attention_lab.lesson_pages import lesson_views
    from transformer_core import CheckpointError

    charts = lesson_views.t5_bias_charts("reverse-t5", 9)
    assert set(charts) == {"encoder", "decoder"} and lesson_views.t5_bias_charts("reverse-t5", 9) is charts
    assert lesson_views.t5_bias_charts("reverse-t5", 10) is not charts
    with pytest.raises(CheckpointError):
        lesson_views.t5_bias_charts("no-such-model", 9)


def test_variance_no_scaling_on_a_shipped_model() -> None:
    at = open_view("variance", scale_model="reverse-sinusoidal")
    stats = table(at, "encoder self", "decoder self", "cross")
    assert stats.shape == (4, 3)
    for kind in stats.columns:  # every kind of attention sharpens without the scaling
        column = stats[kind]
        assert column["mean max weight, no scaling"] > column["mean max weight, scaled"]
        assert column["mean entropy (nats), no scaling"] < column["mean entropy (nats), scaled"]
    assert any(t.endswith("scaled as trained") for t in figure_titles(at))
    at.toggle(key="variance_no_scaling").set_value(True).run()
    assert_ok(at)
    assert any(t.endswith("no scaling") for t in figure_titles(at))
    at.text_input(key="variance_scale_text").set_value("").run()
    assert_ok(at)
    assert at.error and "empty" in at.error[0].value
    at.text_input(key="variance_scale_text").set_value("héllo").run()
    assert_ok(at)
    assert at.warning and "é" in at.warning[0].value


def test_variance_sends_thinned_curves_and_binned_histograms() -> None:
    at = open_view("variance", total=50000, warmup=4000, lr_d_model=512, samples=10000)
    specs = figure_specs(at)
    sent = sum(len(c.proto.bytes) + len(c.proto.json) for c in at.get("bidi_component"))
    assert sent < 200_000  # 50,000 steps x 2 curves and 2 x 10,000 samples would be over 1.5 MB
    lr = next(s for key, s in specs.items() if key.endswith("lr_fig"))
    assert [series["name"] for series in lr["panels"][0]["series"]] == [
        "warm-up, then 1/√step",
        "warm-up, then cosine",
    ]
    for steps, _rates in values(lr):
        assert 790 <= len(steps) <= 810 and steps[0] == 1 and steps[-1] == 50000
        assert 4000 in steps and np.all(np.diff(steps) > 0)
    vaswani = values(lr)[0][1]
    assert vaswani.max() == pytest.approx(512**-0.5 * 4000**-0.5, rel=1e-6)  # the peak is drawn, not skipped
    hist = next(s for key, s in specs.items() if key.endswith("var_hist"))
    for panel, (centres, density), bins in zip(hist["panels"], values(hist), (100, 400), strict=True):
        [series] = panel["series"]  # the scaled bins 0.25 wide
        assert series["type"] == "bars" and len(centres) == bins
        assert (density * series["bar_width"]).sum() == pytest.approx(1.0, rel=1e-5)  # a density


def test_variance_histogram_holds_every_sample_at_d_k_512_and_the_table_has_one_scaled_column() -> None:
    """Issue 11 #7: the axis was fixed at +-50, cutting the tails at d_k 512; and two table
    columns (variance / d_k, variance of q.k / sqrt(d_k)) were always equal."""
    from attention_lab.lessons.variance import score_samples

    at = open_view("variance", d_k=512, samples=10000)
    raw, _ = score_samples(512, 10000)
    assert np.abs(raw).max() > 50  # the old fixed axis cut this sample
    hist = next(s for key, s in figure_specs(at).items() if key.endswith("var_hist"))
    x_range = hist["panels"][0]["x_range"]
    assert hist["panels"][1]["x_range"] == x_range  # one shared axis
    assert x_range[0] <= raw.min() and x_range[1] >= raw.max()
    centres, width = values(hist)[0][0], hist["panels"][0]["series"][0]["bar_width"]
    assert centres[0] - width / 2 <= raw.min() and centres[-1] + width / 2 >= raw.max()
    var = table(at, "d_k", "variance of q·k")
    assert list(var.columns) == ["d_k", "variance of q·k", "variance of q·k / √d_k", ""]
    small = open_view("variance", d_k=4, samples=10000)
    small_hist = next(s for key, s in figure_specs(small).items() if key.endswith("var_hist"))
    assert small_hist["panels"][0]["x_range"] == [-50, 50]  # fixed while the data fit: growth shows


def test_positions_negative_offset_checks_real_positions() -> None:
    at = open_view("positions", offset=-25, length=50, d_model=64)
    assert float(metric(at, "max |M·PE(p) − PE(p+Δ)| over p = 25..74")) < 1e-12
    shift = table(at, "PE(25)", "M·PE(25)", "PE(0)")
    assert (shift["M·PE(25)"] - shift["PE(0)"]).abs().max() < 1e-3
    assert shift["PE(0)"].tolist() == [0.0, 1.0] * 3  # sin 0, cos 0


def test_positions_t5_buckets_and_the_trained_biases() -> None:
    from attention_lab.lessons import positions as lesson
    from tests.app.figures import heatmaps
    from transformer_core.io.checkpoint import load_checkpoint

    at = open_view("positions", t5_len=10, t5_dir="decoder", t5_model="reverse-t5")
    specs = figure_specs(at)
    shown = heatmaps(specs["positions_t5_buckets"])[0]
    np.testing.assert_array_equal(shown, lesson.t5_bucket_map(10, False, 128))
    assert {"positions_t5_bias_encoder", "positions_t5_bias_decoder"} <= set(specs)
    scheme = lesson.t5_schemes(load_checkpoint("reverse-t5").model)["decoder"]
    biases = lesson.t5_head_biases(scheme, 10)
    bias_chart = specs["positions_t5_bias_decoder"]
    assert [s["name"] for s in bias_chart["panels"][0]["series"]] == [f"head {h}" for h in range(4)]
    lines = heatmaps(bias_chart)  # each (2, n): x and y as the browser decodes them
    np.testing.assert_allclose(lines[2][1], biases.bias[2], atol=1e-6)
    np.testing.assert_array_equal(lines[0][0], biases.distances)
    assert lines[0][0].max() == 0  # causal: the past only
    at = open_view("positions", t5_len=999, t5_dir="sideways", t5_model="nope")  # a bad link: defaults
    assert (
        at.slider(key="positions_t5_len").value == 24 and at.radio(key="positions_t5_dir").value == "encoder"
    )
    assert at.selectbox(key="positions_t5_model").value in ("reverse-t5", "gpt-t5")


def test_basics_opens_one_encoder_block_with_chapter_004s_numbers() -> None:
    at = open_view("basics")
    out = tables(at)["basics_block_out"]
    assert out.loc["t0"].round(3).tolist() == [-0.661, 1.462, -1.144, 0.343]  # chapter 004's trace, seed 42
    stats = tables(at)["basics_block_stats"]
    assert stats["mean after"].abs().max() < 1e-3 and stats["std after"].round(2).tolist() == [1.0, 1.0, 1.0]
    z = tables(at)["basics_pe_z"]
    assert z.loc["0:the"].tolist() != z.loc["3:the"].tolist()  # one word, two positions, two rows
    at.number_input(key="basics_block_seed").set_value(7).run()
    assert not at.exception
    assert tables(at)["basics_block_out"].loc["t0"].round(3).tolist() != [-0.661, 1.462, -1.144, 0.343]
    assert at.query_params["block_seed"] in ("7", ["7"])


def test_basics_splits_a_word_into_characters_and_bpe_pieces() -> None:
    at = open_view("basics")
    chars, pieces, merges = (tables(at)[f"basics_token_{k}"] for k in ("chars", "pieces", "merges"))
    assert "".join(chars["character"]) == "unhappiness" and len(chars) == 11
    assert "".join(pieces["piece"]) == "unhappiness" and len(pieces) < len(chars)
    assert merges["symbols after it"].iloc[-1] == " · ".join(pieces["piece"])
    at.text_input(key="basics_token_text").set_value("the statement").run()
    assert not at.exception
    assert list(tables(at)["basics_token_pieces"]["piece"]) == [
        "the",
        "Ġstatement",
    ]  # a frequent word: 1 piece
    assert at.query_params["token_text"] in ("the statement", ["the statement"])
