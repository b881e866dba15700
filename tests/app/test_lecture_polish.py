"""Issue 43, the lecture polished, through AppTest: the chapter-004 starter tour, the trained
lengths marked wherever a length matters, /compare opening on /reversal's lesson head with
scores on both grids, only accepted input in the URL, and notices that name a position by its
character and place. (The browser side: tests/browser/test_lecture_polish.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.lecture import tours
from attention_lab.training.runs import length_table, trained_span
from tests.app.figures import charts, tables, texts
from transformer_core.io.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTS = ROOT / "checkpoints"


def open_page(page: str, params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    at.run()
    if page:
        at.switch_page(f"views/{page}.py")
    at.query_params = dict(params or {})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def notices(at: AppTest) -> str:
    return " | ".join(n.value for kind in ("info", "warning", "error") for n in at.get(kind))


def url(at: AppTest, name: str) -> str | None:
    """The URL's value of `name` after the run (AppTest may keep it as a one-item list)."""
    value = at.query_params.get(name)
    return value[0] if isinstance(value, list) else value


def trained(name: str) -> tuple[int, int]:
    """What the checkpoint's own training arguments say (never a constant of the test)."""
    args = load_checkpoint(CHECKPOINTS / name).meta["train_args"]
    return int(args["min_len"]), int(args["max_len"])


# ---------------------------------------------------------------- 1 the chapter-004 tour


def test_the_chapter_004_tour_steps_through_its_scenes_and_names_its_key_charts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every scene opens without an exception on its page, and every key chart its `show`
    names is drawn there (the browser brings them into view: test_lecture_polish.py)."""
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path))
    scenes = json.loads((ROOT / "app" / "tours" / "chapter-004.json").read_text())["scenes"]
    pages = {s["page"] for s in scenes}
    assert {"positions", "reversal", "compare", "train"} <= pages
    params = [s["params"] for s in scenes]
    assert any(p.get("nocausal") == "true" for p in params) and any(p.get("nopad") == "true" for p in params)
    assert any(p.get("b") == "reverse-none" for p in params)  # a scheme against `none`
    at = open_page("", {"tour": "chapter-004"})
    for k, scene in enumerate(scenes, start=1):
        if k > 1:
            at.button(key="tour_next").click().run()
        assert not at.exception, (k, [e.value for e in at.exception])
        assert url(at, "scene") == str(k)
        shown = tours.key_charts("chapter-004", k)
        assert shown and shown == tuple(scene["show"]), k
        drawn = set(charts(at)) | set(tables(at))
        assert set(shown) <= drawn, (k, set(shown) - drawn)
    assert at.button(key="tour_next").disabled


def test_every_starter_tour_scene_names_key_charts_its_page_draws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path))
    at = open_page("", {"tour": "seed-chapters"})
    for k in range(1, 7):
        if k > 1:
            at.button(key="tour_next").click().run()
        shown = tours.key_charts("seed-chapters", k)
        assert shown and set(shown) <= set(charts(at)), (k, shown)


# ---------------------------------------------------------------- 3 the trained lengths


def test_a_reversal_outside_the_trained_lengths_says_them_and_the_field_helps() -> None:
    shortest, longest = trained("reverse-rope")
    at = open_page("reversal", {"checkpoint": "reverse-rope", "text": "transformer"})
    said = " ".join(texts(at, "warning") + texts(at, "success"))
    assert f"This model was trained on {shortest}–{longest} letters; this input has 11." in said, said
    assert f"words of {shortest}–{longest} letters" in (at.text_input(key="rev_text").help or "")
    at.text_input(key="rev_text").set_value("attention").run()  # inside them: nothing to add
    assert "trained on" not in " ".join(texts(at, "warning") + texts(at, "success"))


def test_compare_says_the_trained_lengths_of_each_side() -> None:
    at = open_page("compare", {"a": "reverse-rope", "b": "reverse-none", "text": "transformer"})
    shown = " ".join(m.value for m in at.markdown)
    shortest, longest = trained("reverse-rope")
    assert f"trained on {shortest}–{longest} letters; this input has 11" in shown
    assert f"{shortest}–{longest} letters" in (at.text_input(key="cmp_text").help or "")


def test_the_length_table_marks_the_trained_lengths_from_its_file() -> None:
    results = length_table()
    span = trained_span(results)
    assert span == tuple(results["train_lengths"])
    at = open_page("train")
    columns = list(tables(at)["length_table"].columns)
    for n in results["lengths"]:
        inside = span[0] <= n <= span[1]
        assert (f"len {n} (trained)" if inside else f"len {n} (never seen)") in columns, columns
    assert any(f"trained on strings of {span[0]} to {span[1]} letters" in c.value for c in at.caption)


# ---------------------------------------------------------------- 4 /compare's lesson head and scores


def test_compare_opens_on_the_head_reversal_opens_on_and_scores_both_grids() -> None:
    rev = open_page("reversal", {"checkpoint": "reverse-rope", "text": "attention"})
    best = (rev.selectbox(key="rev_layer").value, rev.selectbox(key="rev_head").value)
    at = open_page("compare", {"a": "reverse-rope", "b": "reverse-none", "text": "attention"})
    assert (at.selectbox(key="cmp_layer").value, at.selectbox(key="cmp_head").value) == best
    assert (url(at, "layer"), url(at, "head")) == (str(best[0]), str(best[1]))
    figs = charts(at)
    rev_titles = [p["title"] for p in charts(rev)["rev_cross_grid"]["panels"]]
    a_titles = [p["title"] for p in figs["cmp_a_grid"]["panels"]]
    b_titles = [p["title"] for p in figs["cmp_b_grid"]["panels"]]
    assert a_titles == rev_titles  # "L1 H2 · 0.95": the same score as on /reversal
    assert all(t.count(" · ") == 2 and " · Δ" in t for t in b_titles), b_titles  # its score and Δ
    # a head named in the link wins
    at = open_page("compare", {"a": "reverse-rope", "b": "reverse-none", "text": "attention", "layer": "0"})
    assert at.selectbox(key="cmp_layer").value == 0


def test_a_gpt_comparison_opens_on_the_head_gpt_opens_on() -> None:
    gpt = open_page("gpt", {"checkpoint": "gpt-induction", "text": "abcab"})
    lesson = (gpt.selectbox(key="gpt_layer").value, gpt.selectbox(key="gpt_head").value)
    at = open_page(
        "compare", {"a": "gpt-induction", "b": "gpt-induction", "b_nopos": "true", "text": "abcab"}
    )
    assert (at.selectbox(key="cmp_layer").value, at.selectbox(key="cmp_head").value) == lesson
    titles = [p["title"] for p in charts(at)["cmp_a_grid"]["panels"]]
    assert all(t.count(" · ") == 1 for t in titles), titles  # each head's previous-token score


# ---------------------------------------------------------------- 5 accepted input only, positions in words


@pytest.mark.parametrize(("page", "size"), [("reversal", 2000), ("gpt", 2000)])
def test_a_refused_link_text_never_stays_in_the_url(page: str, size: int) -> None:
    at = open_page(page, {"text": "x" * size})
    assert "Shorten it" in notices(at)
    assert url(at, "text") is None  # no accepted text yet: none
    key = "rev_text" if page == "reversal" else "gpt_text"
    widget = at.text_input(key=key) if page == "reversal" else at.text_area(key=key)
    widget.set_value("hello").run()
    assert url(at, "text") == "hello"
    widget.set_value("y" * size).run()
    assert url(at, "text") == "hello"  # the last accepted one


def test_a_link_query_is_named_by_its_character_and_place() -> None:
    text = "The with statement"
    at = open_page("gpt", {"text": text, "query": "-5"})
    said = notices(at)
    assert "`query=-5`" in said and "showing -1" not in said
    assert f"the last character `{text[-1]}` at position {len(text) - 1}" in said, said
    at = open_page("gpt", {"text": text, "query": "99999"})
    assert f"the prompt has {len(text)} characters; showing the last character `{text[-1]}`" in notices(at)
    at = open_page("gpt", {"text": text, "query": "abc"})
    assert "`query=abc`" in notices(at) and "(showing -1)" not in notices(at)
