"""From a head on /gpt and /reversal to why it attends: the link under the maps opens /heads on
the same checkpoint, text and head, whose section 9 then splits that head's scores on that text;
and /heads' own link carries section 9's query and key and section 11's score."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.figures import charts

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 240


def opened(page: str, query_params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=TIMEOUT)
    at.run()
    at.switch_page(page)
    at.query_params = dict(query_params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def split_link(at: AppTest) -> tuple[str, dict[str, str]]:
    links = [e.proto for e in at.main.get("page_link") if "attends there: its score split" in e.proto.label]
    assert len(links) == 1
    return links[0].page, {k: v[0] for k, v in parse_qs(links[0].query_string).items()}


@pytest.mark.parametrize(
    ("page", "params", "kind", "tokens"),
    [
        ("views/gpt.py", {"checkpoint": "gpt-induction", "text": "abcdabcd", "layer": "1", "head": "1"},
         "self", list("abcdabcd")),
        ("views/reversal.py", {"checkpoint": "reverse-rope", "text": "attention", "layer": "1", "head": "2"},
         "cross", [*"attention", "<eos>"]),
    ],
)  # fmt: skip
def test_a_heads_link_opens_its_score_split_on_the_same_text(page, params, kind, tokens) -> None:
    at = opened(page, {**params, "max_new": "5"})
    target, link = split_link(at)
    assert target == "heads"
    assert link == {
        "checkpoint": params["checkpoint"],
        "probe": params["text"],
        "open": f"{kind}:1.{params['head']}",
        "why_query": "-1",  # the last query and the key it attends most, whatever the session held
        "why_key": "-1",
    }
    heads = opened("views/heads.py", link)
    assert "heads_why_map" in charts(heads)  # section 9's split of this head
    keys = next(b for b in heads.main.selectbox if b.label == "Key position").options
    shown = [k.split(" · ", 1)[1].removesuffix(" (attended most)") for k in keys]
    assert shown == tokens  # the keys: the text the link carried, not /heads' own probe
    caption = " ".join(c.value for c in heads.main.caption)
    assert f"layer 1 head {params['head']}: score" in caption


def box(at: AppTest, label: str):
    return next(b for b in at.main.selectbox if b.label == label)


def url(at: AppTest, key: str) -> str:
    v = at.query_params[key]
    return v[0] if isinstance(v, list) else v


def attended_most(at: AppTest) -> int:
    return next(i for i, o in enumerate(box(at, "Key position").options) if o.endswith("(attended most)"))


def test_the_heads_link_keeps_the_split_cell_and_the_dataset_score() -> None:
    params = {"checkpoint": "gpt-induction", "open": "self:1.1", "why_query": "5", "why_key": "2"}
    at = opened("views/heads.py", {**params, "profile": "first_token"})
    assert (box(at, "Query position").value, box(at, "Key position").value) == (5, 2)
    assert attended_most(at) != 2  # the link's key, not the one the page would open on
    assert box(at, "Score across the dataset").value == "first_token"
    assert (url(at, "why_query"), url(at, "why_key"), url(at, "profile")) == ("5", "2", "first_token")
    box(at, "Query position").set_value(7).run()
    assert box(at, "Query position").value == 7 and url(at, "why_query") == "7"
    assert box(at, "Key position").value == attended_most(at)  # another query opens on its best key
    assert url(at, "why_key") == str(attended_most(at))
    far = opened("views/heads.py", {**params, "why_query": "999"})  # past the probe text: named
    assert any("why_query=999" in i.value for i in far.info)
    assert box(far, "Query position").value == len(box(far, "Query position").options) - 1
