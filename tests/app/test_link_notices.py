"""Issue 27 #2: every link value a page cannot use is named in a notice, and the page shows
its default (or the nearest it can) instead; nothing is replaced silently."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def open_page(page: str, **params: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    at.run()
    at.switch_page(f"views/{page}.py")
    at.query_params = dict(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def notices(at: AppTest) -> str:
    return " | ".join(n.value for kind in ("info", "warning", "error") for n in at.get(kind))


def test_a_query_past_the_prompt_or_below_zero_is_named() -> None:
    text = "The with statement"
    at = open_page("gpt", text=text, query="99999")
    assert (
        "`query=99999` is not available" in notices(at)
        and at.selectbox(key="gpt_query").value == len(text) - 1
    )
    at = open_page("gpt", text=text, query="-5")
    assert "`query=-5`" in notices(at) and at.selectbox(key="gpt_query").value == len(text) - 1
    at = open_page("gpt", text=text, query="3")
    assert "query" not in notices(at) and at.selectbox(key="gpt_query").value == 3


def test_unknown_wave_dimensions_are_named_and_the_default_shown() -> None:
    at = open_page("positions", dims="abc,999")
    said = notices(at)
    assert "`dims`: abc, 999 not available here; showing 0, 8, 14, 20" in said, said
    assert at.multiselect(key="positions_dims").value == ["0", "8", "14", "20"]
    at = open_page("positions", dims="3,abc")
    assert "`dims`: abc not available here; showing 3" in notices(at)


@pytest.mark.parametrize(
    ("page", "params", "key", "says"),
    [
        ("variance", {"scale_model": "nonexistent"}, "variance_scale_model", "`scale_model=nonexistent`"),
        ("variance", {"scale_kind": "bogus"}, "variance_scale_kind", "`scale_kind=bogus`"),
        ("heads", {"checkpoint": "gpt-induction", "open": "self:9.9"}, "heads_open", "`open=self:9.9`"),
    ],
)
def test_unknown_choices_are_named(page: str, params: dict[str, str], key: str, says: str) -> None:
    at = open_page(page, **params)
    assert f"{says} is not available" in notices(at), notices(at)
    assert at.session_state[key] != params[key.split("_", 1)[1]]  # what is shown instead


def test_a_tour_link_names_the_view_values_its_scene_replaces() -> None:
    """Found by benchmarks/fuzz_pages.py (20,000-case run): /basics?house=0&tour=… opened the
    tour's scene 1 and dropped house=0 without a word."""
    at = open_page("basics", house="0", perm="x" * 50, tour="seed-chapters")
    said = notices(at)
    assert "The tour's scene 1 sets its own view, so the link's `house=0`, `perm=" in said
    assert "were not used" in said and at.slider(key="basics_house").value == 2.0  # the scene's view
    at = open_page("basics", house="0", tour="seed-chapters")  # one value: said in the singular
    assert "so the link's `house=0` was not used." in notices(at)
    at = open_page("basics", tour="seed-chapters")  # a plain tour link: nothing to name
    assert "sets its own view" not in notices(at)


def test_values_the_fuzz_run_found_replaced_silently_are_named() -> None:
    """benchmarks/fuzz_pages.py (the 20,000-case run) found two more: a query inside the
    prompt with the sample traced (the walk moves to the sampled part), and an ALiBi head past
    the number of heads the same link asked for."""
    at = open_page("gpt", text="The with statement", sampled="1", query="0")
    assert "`query=0` lies inside the prompt" in notices(at) and at.selectbox(key="gpt_query").value == 17
    at = open_page("gpt", text="The with statement", sampled="1")  # the default query: nothing to say
    assert "query" not in notices(at)
    at = open_page("positions", alibi_head="13", alibi_heads="13")
    assert "`alibi_head=13` is not available with 13 heads; showing 0" in notices(at)
    assert at.selectbox(key="positions_alibi_head").value == 0
    at = open_page("positions", alibi_head="12", alibi_heads="13")
    assert "alibi_head" not in notices(at) and at.selectbox(key="positions_alibi_head").value == 12


def test_a_page_that_reads_its_link_twice_names_both_halves() -> None:
    """/compare reads `a` before it knows b's default, then the rest: a link bad in both halves
    drew two notices, and the second took the first's container key (Streamlit raised)."""
    at = open_page("compare", a="no-such-model", b="nor-this", layer="x")
    warnings = [w.value for w in at.get("warning") if w.value.startswith("Ignored from the link")]
    assert len(warnings) == 2, warnings
    assert "`a=no-such-model`" in warnings[0] and "`b=nor-this`" in warnings[1] and "`layer=x`" in warnings[1]
