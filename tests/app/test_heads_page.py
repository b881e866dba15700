"""The /heads page through Streamlit's AppTest: one table row per head with the library's
scores, score maps, importance, rollout, logit lens (GPT), and the deep link into an explorer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.figures import charts, heatmaps, tables
from transformer_core.interp.lens import rollout_of
from transformer_core.interp.report import report_detectors, report_importance
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
    assert params == {"checkpoint": "reverse-rope", "layer": "1", "head": "3"}
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
