"""The chart specs (charts.specs, lesson_pages.lesson_charts): the numbers the browser draws are the
numbers computed, in the encodings charts.js decodes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attention_lab.charts import component as chart_component
from attention_lab.charts import script as chart_script
from attention_lab.charts import specs as charts
from attention_lab.lesson_pages import lesson_charts as lc
from attention_lab.lesson_pages import position_charts as pc
from attention_lab.lessons import basics, variance
from attention_lab.lessons.training import lr_schedules


def test_colour_scales_are_colorbrewers_and_reverse_with_r() -> None:
    blues = charts.colorscale_steps("Blues")
    assert blues[0] == [0.0, "rgb(247,251,255)"] and blues[-1] == [1.0, "rgb(8,48,107)"] and len(blues) == 9
    rdbu, reverse = charts.colorscale_steps("RdBu"), charts.colorscale_steps("RdBu_r")
    assert rdbu[5] == [0.5, "rgb(247,247,247)"]  # white in the middle of 11 stops
    assert [c for _, c in reverse] == [c for _, c in rdbu][::-1]


def test_a_quantized_map_keeps_four_decimals_and_its_gaps() -> None:
    rng = np.random.default_rng(0)
    z = rng.uniform(-1, 1, size=(64, 256))
    z[3, 7] = np.nan
    spec = charts.head_spec(z, [str(i) for i in range(64)], [str(i) for i in range(256)], zmin=-1, zmax=1,
                            quantized=True)  # fmt: skip
    sent = spec["panels"][0]["z"]
    assert sent["dtype"] == "u2" and sent["nan"] == charts.NAN_STEP
    [back] = charts.values(spec)
    assert np.isnan(back[3, 7]) and np.isnan(back).sum() == 1
    assert np.nanmax(np.abs(back - z)) <= 1 / 65534 + 1e-12  # half a step of 2 / 65534
    float32 = charts.head_spec(z, [""] * 64, [""] * 256)["panels"][0]["z"]
    assert len(sent["bdata"]) * 2 == len(float32["bdata"])  # half the bytes of float32


def test_the_padding_maps_show_the_masked_weights_and_outline_the_padding() -> None:
    plain, masked = basics.masked_rows(np.asarray(basics.PADDED_SCORES), (2, 3))
    pad = ~basics.valid_length_mask((2, 3), 4)
    spec = lc.value_heatmap(masked, ["k0", "k1", "k2", "k3"], ["row 1", "row 2"], "masked", marks=pad)
    [sent] = charts.values(spec)
    np.testing.assert_allclose(sent, masked, rtol=1e-6)
    assert sent[0, 2:].tolist() == [0.0, 0.0] and sent[1, 3] == 0.0  # exactly zero on padding
    assert spec["outline"]["dash"] and spec["outline"]["cells"] == [[0, 2], [0, 3], [1, 3]]
    assert spec["cell_digits"] == charts.WEIGHT_DIGITS and (spec["zmin"], spec["zmax"]) == (0.0, 1.0)
    unbounded = lc.value_heatmap(
        np.array([[-3.0, 1.0]]), ["a", "b"], ["q"], colorscale="RdBu_r", zmin=None, zmax=None
    )
    assert (unbounded["zmin"], unbounded["zmax"]) == (-3.0, 3.0)  # a diverging scale centred on 0


def test_score_histograms_are_densities_on_one_axis_that_holds_every_sample() -> None:
    raw, scaled = variance.score_samples(512, 4000)
    spec = lc.score_histograms(raw, scaled, 512)
    assert spec["kind"] == "xy" and spec["title"] == "d_k = 512: 4000 random (q, k) pairs"
    (left, right) = spec["panels"]
    assert left["x_range"] == right["x_range"] and left["x_range"][1] >= np.abs(raw).max()
    for panel, (centres, density) in zip(spec["panels"], charts.values(spec), strict=True):
        width = panel["series"][0]["bar_width"]
        assert density.sum() * width == pytest.approx(1.0, rel=1e-5)
        assert centres[0] - width / 2 == pytest.approx(left["x_range"][0])
    assert right["series"][0]["bar_width"] == pytest.approx(0.25)  # the scaled scores' fine bins


def test_saturation_is_drawn_against_d_k_on_a_log_axis_both_ways() -> None:
    sat = variance.softmax_saturation(variance.SATURATION_DIMS, 16, n_rows=32)
    spec = lc.saturation_chart(sat, 64, 16)
    assert [p["title"] for p in spec["panels"]][0] == "entropy of the row (nats)"
    for panel in spec["panels"]:
        assert panel["x_log"] and [v for v, _ in panel["x_ticks"]] == list(sat.dims)
        assert [s["name"] for s in panel["series"]] == ["scaled by 1/√d_k", "unscaled"]
        assert panel["vlines"] == [{"x": 64.0, "text": ""}]
    (dims, entropy_scaled), *_ = charts.values(spec)
    np.testing.assert_allclose(dims, sat.dims)
    np.testing.assert_allclose(entropy_scaled, sat.entropy_scaled, rtol=1e-6)


def test_the_learning_rate_chart_keeps_the_peak_of_a_long_schedule() -> None:
    sch = lr_schedules(512, 4000, 50000)
    spec = lc.lr_chart(sch, 4000)
    (steps, vaswani), (_, cosine) = charts.values(spec)
    assert len(steps) <= 810 and 4000 in steps
    assert vaswani.max() == pytest.approx(sch.vaswani.max(), rel=1e-6)
    assert spec["panels"][0]["vlines"] == [{"x": 4000.0, "text": "end of warm-up"}]


def test_bars_write_their_values_and_keep_a_given_range() -> None:
    spec = pc.slopes_chart(np.array([0.5, 0.25, 0.125]))
    assert spec["series"][0]["text"] == ["0.5", "0.25", "0.125"] and spec["text_angle"] == -90
    assert spec["y_range"] == [0.0, pytest.approx(0.8)]
    bars, cloud = lc.retrieval_charts(["a", "b"], np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0.25, 0.75]),
                                      np.array([0.75, 0.25]))  # fmt: skip
    assert bars["series"][0]["text"] == ["0.250", "0.750"]  # weights: WEIGHT_DIGITS decimals
    values, context = charts.values(cloud)
    assert values.T.tolist() == [[0.0, 1.0], [1.0, 0.0]] and context.T.tolist() == [[0.75, 0.25]]
    assert cloud["panels"][0]["series"][0]["sizes"] == [24.5, 49.5]  # sized by weight


def test_html_tables_format_floats_by_digits_and_name_what_does_not_apply() -> None:
    from attention_lab.frame import tables

    frame = pd.DataFrame(
        {"step": [1, 2], "loss": [0.123456, float("nan")], "s": [-np.inf, 2.5], "ok": [True, False]}
    )
    text = tables.to_html(frame, key="t", digits=3, formats={"s": "{:.1f}"}, index=False)
    assert 'data-key="t"' in text and '<td class="num">1</td>' in text  # integers as they are
    assert ">0.123<" in text and ">—<" in text  # 3 decimals; a dash for NaN
    assert ">−∞<" in text and ">2.5<" in text  # a format overrides digits; a masked score
    assert ">yes<" in text and ">no<" in text


def test_html_tables_keep_row_names_text_columns_and_bars_cell_for_cell() -> None:
    from attention_lab.frame import tables

    frame = pd.DataFrame(
        {"token": pd.array(["a", None], dtype="string"), "p": [0.25, 1.0]}, index=["q0", "q1"]
    )
    text = tables.to_html(frame, key="k", formats={"p": "{:.2f}"}, bars={"p": (0.0, 1.0)})
    assert text.split("<tbody>")[1] == (
        '<tr><th>q0</th><td>a</td><td class="bar"><span style="--share:25.0%">0.25</span></td></tr>'
        '<tr><th>q1</th><td>&lt;NA&gt;</td><td class="bar"><span style="--share:100.0%">1.00</span></td></tr>'
        "</tbody></table></div>"
    )
    empty = tables.to_html(pd.DataFrame(index=[0, 1]), key="e")  # rows, no columns
    assert "<tbody><tr><th>0</th></tr><tr><th>1</th></tr></tbody>" in empty


def test_a_matrix_table_is_the_html_of_the_frame_it_stands_for() -> None:
    """tables.Matrix (a lesson's q, k, v without pandas) writes the bytes its float frame would:
    row names, column names, digits, formats, bars, NaN and infinities, every shape /basics uses."""
    from attention_lab.frame import tables

    rng = np.random.default_rng(1)
    for shape in [(2, 2), (4, 4), (5, 8), (1, 3), (6, 6)]:
        values = rng.normal(size=shape) * 10.0 ** rng.integers(-3, 3, size=shape)
        values[0, 0] = np.nan
        values[-1, -1] = -np.inf
        rows, cols = [f"t{i}" for i in range(shape[0])], ["x", "<y>", *[f"d{j}" for j in range(shape[1] - 2)]]
        cols = cols[: shape[1]]
        names = pd.Index(rows, dtype=object), pd.Index(cols, dtype=object)
        frame = pd.DataFrame(values, index=names[0], columns=names[1])
        for options in [
            {"digits": 4},
            {"digits": 2, "index": False},
            {},
            {"bars": {cols[0]: (-1.0, 1.0)}},
            {"digits": 3, "formats": {cols[0]: "{:.1e}", cols[-1]: lambda v: f"{v:+.2f}"}},
        ]:
            matrix = tables.Matrix.of(values, rows, cols)
            assert tables.to_html(matrix, key="m", **options) == tables.to_html(frame, key="m", **options)
    with pytest.raises(ValueError, match=r"\(2, 2\) values for 3 rows and 2 columns"):
        tables.Matrix.of(np.zeros((2, 2)), ["a", "b", "c"], ["x", "y"])


# ---------------------------------------------------------------- the drawing modules (app/static)

MODULES = [chart_script.SCRIPT, *chart_script.modules()]


def test_every_module_imports_only_what_another_exports_and_stays_small() -> None:
    """charts.js and charts/*.js: each name imported is exported by the module named (the
    bundle relies on it too), each module under 400 lines, each top-level function under 80."""
    exported = re.compile(r"^export (?:async function|function|const) (\w+)", re.MULTILINE)
    exports = {path: set(exported.findall(path.read_text())) for path in MODULES}
    for path in MODULES:
        text = path.read_text()
        lines = text.splitlines()
        assert len(lines) < 400, path.name
        for names, source in re.findall(r'^import \{([^}]*)\} from "([^"]+)";', text, re.MULTILINE):
            wanted = {n.strip() for n in names.split(",")}
            assert wanted <= exports[(path.parent / source).resolve()], (path.name, source)
        ends = [i for i, line in enumerate(lines) if line == "}"]
        for start, line in enumerate(lines):
            if re.match(r"(export )?(default )?function", line):
                assert min(e for e in ends if e > start) - start < 80, (path.name, line)


def test_a_server_without_static_serving_gets_every_module_in_one_script(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    options = {"server.enableStaticServing": False, "server.baseUrlPath": ""}
    monkeypatch.setattr(chart_component.st, "get_option", options.__getitem__)
    bundle = chart_component.script()
    assert not re.search(r"^import ", bundle, re.MULTILINE)
    assert re.findall(r"^export .*", bundle, re.MULTILINE) == ["export default function (component) {"]
    # tests/browser/test_chart_bundle.py runs it in Chromium


def test_the_loaders_url_changes_with_any_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A browser that cached the modules of the last version asks for charts.js anew when any
    module changed: its ?v= is a hash of them all."""
    options = {"server.enableStaticServing": True, "server.baseUrlPath": "lab"}
    monkeypatch.setattr(chart_component.st, "get_option", options.__getitem__)
    static = tmp_path / "static"
    shutil.copytree(chart_script.STATIC, static)
    monkeypatch.setattr(chart_script, "STATIC", static)
    before = chart_component.script()
    assert "/lab/app/static/charts.js?v=" in before
    with open(static / "charts" / "axes.js", "a") as module:
        module.write("// changed\n")
    assert chart_component.script() != before


def test_a_weight_reads_one_way_and_never_zero_unless_it_is() -> None:
    """WEIGHT_DIGITS decimals; a non-zero weight too small for them in e-notation (as the
    charts' tips write it), so no caption says 0.000 above "nobody gets exactly zero"."""
    assert [charts.weight_text(w) for w in (0.0, 1.0, 0.0087, 0.0005, 0.00049, 2.5e-9)] == [
        "0.000", "1.000", "0.009", "0.001", "4.9e-4", "2.5e-9"
    ]  # fmt: skip
