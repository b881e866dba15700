"""The /heads page through Streamlit's AppTest: one table row per head with the library's
scores, score maps, importance, rollout, logit lens (GPT), and the deep link into an explorer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.charts.specs import values
from tests.app.figures import charts, heatmaps, tables
from tests.support.calls import count_calls
from transformer_core.interp.lens import rollout_of
from transformer_core.interp.report import report_composition, report_detectors, report_importance
from transformer_core.io.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120


def open_heads(query_params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page("views/heads.py")
    at.query_params = dict(query_params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def displayed(at: AppTest) -> pd.DataFrame:
    """The score table as the page shows it (numbers to 3 decimals, NaN where a dash)."""
    return tables(at)["heads_table"]


def page_link(at: AppTest) -> tuple[str, dict[str, str]]:
    """(page, query params) of the page's "Open ... in the explorer" link."""
    links = [e for e in at.main.get("page_link") if "explorer" in e.proto.label]
    assert len(links) == 1
    proto = links[0].proto
    params = dict(p.split("=", 1) for p in proto.query_string.split("&") if p)
    return proto.page, params


def test_reversal_checkpoint_table_maps_and_link():
    at = open_heads({"checkpoint": "reverse-rope", "open": "cross:1.3"})
    table = displayed(at)
    assert len(table) == 3 * 2 * 4
    assert set(table["kind"]) == {
        "encoder self-attention",
        "decoder masked self-attention",
        "cross-attention",
    }
    ckpt = load_checkpoint("reverse-rope")
    scores = report_detectors(ckpt, None).scores
    row = table[table["head"] == "cross:1.2"].iloc[0]
    assert row["anti-diagonal"] == pytest.approx(scores["cross"]["anti_diagonal"][1, 2], abs=5e-4)
    assert np.isnan(row["previous token"])  # not applicable to cross-attention: a dash on the page
    html = next(e.value for e in at.get("html") if 'data-key="heads_table"' in e.value)
    assert "None" not in html and "nan" not in html and html.count(">—<") >= 2 * 4 * 3
    assert table.iloc[0]["best score"] >= 0.8  # sorted: an anti-diagonal cross head on top
    figs = charts(at)
    assert {"heads_maps", "heads_grid", "heads_importance", "heads_rollout"} <= set(figs)
    assert "heads_lens" not in tables(at)  # no logit lens for reversal
    maps = figs["heads_maps"]  # one map per (kind, score), each over layers x heads
    r, c = (
        maps["row_titles"].index("cross-attention"),
        [p["title"] for p in maps["panels"]].index("anti-diagonal"),
    )
    cross_anti = heatmaps(maps)[r * maps["columns"] + c]
    np.testing.assert_allclose(cross_anti, scores["cross"]["anti_diagonal"], atol=1e-6)
    assert maps["panels"][r * maps["columns"] + c]["zmax"] == 1.0  # shares of attention: one 0..1 scale
    roll = heatmaps(figs["heads_rollout"])[0]
    np.testing.assert_allclose(roll, rollout_of(ckpt.model, ckpt.tokenizer.encode("attention")), atol=1e-5)
    page, params = page_link(at)
    assert page == "reversal"  # the /reversal address
    assert params == {"checkpoint": "reverse-rope", "layer": "1", "head": "3", "text": "attention"}
    assert at.query_params["open"] == "cross:1.3"


def test_gpt_checkpoint_lens_importance_and_deep_link_into_gpt_explorer():
    params = {"checkpoint": "gpt-rope", "open": "self:2.1", "probe": "The return statement"}
    at = open_heads(params)
    table = displayed(at)
    assert len(table) == 16 and "Δ exact match" not in table.columns
    ckpt = load_checkpoint("gpt-rope")
    imp = report_importance(ckpt, ("The return statement",))
    row = table[table["head"] == "self:3.0"].iloc[0]
    assert row["Δ loss (ablated)"] == pytest.approx(imp.delta_loss["self"][3, 0], abs=5e-4)
    assert row["|∂loss/∂gate|"] == pytest.approx(imp.gradient["self"][3, 0], rel=5e-3)  # 3 significant digits
    lens = tables(at)["heads_lens"]
    assert list(lens.index) == ["embed", "layer 0", "layer 1", "layer 2", "layer 3"]
    assert len(lens.columns) == len("The return statement")
    page, link = page_link(at)
    assert page == "gpt"
    assert link == {"checkpoint": "gpt-rope", "layer": "2", "head": "1", "text": "The+return+statement"}
    # follow the link: the GPT explorer opens at that layer and head
    gpt = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    gpt.run()
    gpt.switch_page("views/gpt.py")
    gpt.query_params = {"checkpoint": "gpt-rope", "layer": "2", "head": "1"}
    gpt.run()
    assert not gpt.exception
    assert gpt.selectbox(key="gpt_layer").value == 2 and gpt.selectbox(key="gpt_head").value == 1


def test_gpt_induction_shows_previous_token_and_induction_heads_on_top():
    at = open_heads({"checkpoint": "gpt-induction"})
    top = displayed(at).head(4)  # sorted by each head's best template score
    assert set(top[top["looks like"] == "induction"]["layer"]) == {1}
    assert set(top[top["looks like"] == "previous token"]["layer"]) == {0}


def test_gpt_induction_opens_on_a_repeated_segment_and_its_link_carries_it():
    """Issue 24: on the built-in sentences ("hereturnstatement" in this model's letters) its
    induction heads looked like first-token heads and the explorer link lost the probe."""
    at = open_heads({"checkpoint": "gpt-induction", "open": "self:1.1"})
    assert any("qwhzkfjtmbrxqwhzkfjtmbrx" in c.value for c in at.caption)
    lens = tables(at)["heads_lens"]
    assert len(lens.columns) == 24
    second_copy = [cell.split("\u00a0")[0] for cell in lens.loc["layer 1"].iloc[12:23]]
    assert second_copy == list("whzkfjtmbrx")  # the repeat read off the first copy
    page, link = page_link(at)
    assert page == "gpt" and link["text"] == "qwhzkfjtmbrxqwhzkfjtmbrx"
    maps = charts(at)["heads_maps"]
    assert maps["colorbar"]["title"] == "share" and (maps["zmin"], maps["zmax"]) == (0.0, 1.0)
    assert all(p["digits"] is not None for p in maps["panels"])  # values written in the cells


def test_a_gpt_sweep_runs_on_held_out_text_and_the_induction_probe_apart():
    at = open_heads({"checkpoint": "gpt-sinusoidal"})
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Measured on 16 held-out windows") for c in captions)
    assert any(c.startswith("Measured on an induction probe") for c in captions)
    figs = charts(at)
    main, probe = heatmaps(figs["heads_importance"])[0], heatmaps(figs["heads_importance_probe"])[0]
    assert np.unravel_index(np.argmax(main), main.shape) == (0, 0)  # what the model needs for its text
    assert np.unravel_index(np.argmax(probe), probe.shape) != (0, 0)


def test_the_table_sorts_by_any_score_and_the_link_keeps_it():
    at = open_heads({"checkpoint": "gpt-induction", "sort": "Δ loss (ablated)"})
    assert at.selectbox(key="heads_sort").value == "Δ loss (ablated)"
    delta = displayed(at)["Δ loss (ablated)"].to_numpy(dtype=float)
    assert (np.diff(delta) <= 0).all() and delta[0] > delta[-1]  # the head the model needs most on top
    at.selectbox(key="heads_sort").set_value("induction").run()
    induction = displayed(at)["induction"].to_numpy(dtype=float)
    assert (np.diff(induction) <= 0).all() and at.query_params["sort"] == "induction"
    bad = open_heads({"checkpoint": "gpt-induction", "sort": "<script>"})
    assert bad.selectbox(key="heads_sort").value == "best score"


def test_bad_checkpoint_in_url_falls_back_without_a_traceback():
    at = open_heads({"checkpoint": "../../etc", "score": "nonsense"})
    assert at.session_state["heads_checkpoint"] == "gpt-induction"


def test_the_composition_maps_show_the_previous_token_head_feeding_the_induction_head():
    at = open_heads({"checkpoint": "gpt-induction"})
    figs = charts(at)
    k = figs["heads_composition_k"]
    assert k["y"] == ["L1H0", "L1H1", "L1H2", "L1H3"] and k["x"] == ["L0H0", "L0H1", "L0H2", "L0H3"]
    scores = report_composition(load_checkpoint("gpt-induction"))
    for mode in "qkv":
        shown = heatmaps(figs[f"heads_composition_{mode}"])[0]
        np.testing.assert_allclose(shown, getattr(scores, mode)[0, :, 1, :].T, atol=1e-6)
    shown = heatmaps(k)[0]
    assert shown[1, 1] > np.median(shown)  # L0H1 (previous token) into L1H1's keys (induction)
    reversal = open_heads({"checkpoint": "reverse-rope"})
    assert not any(f.startswith("heads_composition") for f in charts(reversal))


def test_patching_attribution_and_the_lens_on_gpt_induction():
    from attention_lab.charts.head_plots import restored_share
    from transformer_core.interp.report import report_attribution, report_patching

    at = open_heads({"checkpoint": "gpt-induction"})
    ckpt = load_checkpoint("gpt-induction")
    patching = report_patching(ckpt, "qwhzkfjtmbrxqwhzkfjtmbrx", "qwhzkfjtmbrxpnsgadeucvlo")
    shown = heatmaps(charts(at)["heads_patching"])[0]
    np.testing.assert_allclose(shown, restored_share(patching)["self"], atol=1e-5)
    assert np.unravel_index(np.nanargmax(shown), shown.shape) == (1, 1)  # the strongest induction head
    assert shown[0].max() < 0.2 < shown[1, 1]  # layer 0 alone restores little
    dla = heatmaps(charts(at)["heads_dla"])[0]
    np.testing.assert_allclose(dla, report_attribution(ckpt).heads, atol=1e-5)
    lens = tables(at)["heads_lens"]
    assert lens.loc["layer 1"].iloc[13].endswith("✓")  # the second copy read off the first
    assert " · " in lens.loc["embed"].iloc[13]  # the embedding alone does not know it
    # a bad pair: a clear message, the rest of the page stays
    at.text_input(key="heads_corrupt_induction").set_value("qwhz").run()
    assert not at.exception
    assert any("length" in e.value for e in at.error)
    assert "heads_patching" not in charts(at) and "heads_dla" in charts(at)


def test_the_view_is_computed_once_and_shared_by_every_user(monkeypatch: pytest.MonkeyPatch) -> None:
    from attention_lab.viewmodel import heads as heads_viewmodel

    calls = count_calls(monkeypatch, heads_viewmodel, "heads_page")
    first = open_heads({"checkpoint": "reverse-sinusoidal", "probe": "views"})
    assert len(calls) == 1
    first.selectbox(key="heads_sort").set_value("entropy (nats)").run()  # a rerun: the view is reused
    assert not first.exception and len(calls) == 1
    open_heads({"checkpoint": "reverse-sinusoidal"})  # the built-in probe: a view of its own
    assert len(calls) == 2
    second = open_heads({"checkpoint": "reverse-sinusoidal", "probe": "views"})  # another user
    third = open_heads({"checkpoint": "reverse-sinusoidal", "probe": "views"})
    assert len(calls) == 2
    assert displayed(second).equals(displayed(third))
    assert calls[0][0].texts == ("views",) and calls[1][0].texts is None


def test_the_patterns_switch_to_value_weighted_attention() -> None:
    """weighted=1: section 3's grid is each key's share of ||alpha v W_O|| on the first probe
    text, as computed from the captured weights, values and W_O layer by layer."""
    from transformer_core.interp import record_arrays, trace_gpt
    from transformer_core.interp.attribution import sent_shares

    at = open_heads({"checkpoint": "gpt-induction", "weighted": "1"})
    assert at.toggle(key="heads_weighted").value
    grid = charts(at)["heads_grid"]
    assert grid["value_name"] == "share sent"
    ckpt = load_checkpoint("gpt-induction")
    text = "".join(grid["x"])
    tr = trace_gpt(ckpt.model, ckpt.tokenizer, text)
    layers = sorted((r for r in tr.capture.records if r.kind == "self"), key=lambda r: r.layer)
    expected = [
        sent_shares(rec["weights"], rec["v"], block.self_attn.out_proj.weight.detach().numpy())
        for rec, block in zip((record_arrays(r) for r in layers), ckpt.model.blocks, strict=True)
    ]
    shown = heatmaps(grid)
    flat = [h for layer in expected for h in layer]  # (layer, head) order, as the grid's panels
    assert len(shown) == len(flat)
    for got, want in zip(shown, flat, strict=True):
        assert np.abs(got - want).max() <= 0.5e-4 + 1e-6  # the grid travels in steps of 1e-4
    raw = charts(open_heads({"checkpoint": "gpt-induction"}))["heads_grid"]
    assert raw["value_name"] == "weight" and heatmaps(raw)[0].shape == shown[0].shape


def test_the_geometry_colours_by_token_kind_and_links_a_query_to_its_highest_scoring_keys() -> None:
    from attention_lab.charts.head_plots import TOKEN_KINDS, token_kind
    from attention_lab.models.explorer_compute import head_geometry

    at = open_heads({"checkpoint": "gpt-rope", "open": "self:1.0", "geo_colour": "token", "geo_query": "5"})
    queries, keys = charts(at)["heads_geometry"]["panels"]
    assert [s["name"] for s in queries["series"]] == list(TOKEN_KINDS)
    names = [s["name"] for s in keys["series"]]
    assert names[:4] == list(TOKEN_KINDS) and names[4] == "to its 5 highest-scoring keys"
    assert names[5].startswith("query '") and names[5].endswith("' at 5")
    geometry, _ = head_geometry(load_checkpoint("gpt-rope"), 1, 0, False)
    drawn = values(charts(at)["heads_geometry"])  # (2, n) per series: 4 query groups, then the keys'
    assert np.allclose(drawn[9][:, 0], geometry.coords[5], atol=1e-4)  # the star: where the query lies
    linked = drawn[8][:, 1::3].T  # query, key, gap per link: each key's (x, y)
    wanted = geometry.coords[geometry.n_queries + geometry.nearest_keys(5, 5)]
    assert np.allclose(linked, wanted, atol=1e-4)
    spaces = [t for t in geometry.tokens[: geometry.n_queries] if token_kind(t) == "space or line break"]
    assert drawn[2].shape[1] == len(spaces) > 0
    written = [at.query_params[k] for k in ("geo_query", "geo_colour")]
    assert written in (["5", "token"], [["5"], ["token"]]), written
    assert (token_kind("␣the"), token_kind("7"), token_kind("↵"), token_kind("(")) == (
        "letter", "digit", "space or line break", "punctuation or symbol")  # fmt: skip
