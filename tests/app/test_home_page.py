"""Home through Streamlit's AppTest: the device line, the shipped-models tables, and the
toolbar setting that hides Streamlit's developer menu from students."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.app.figures import tables
from transformer_core import describe_device

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def one_thread(monkeypatch: pytest.MonkeyPatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("ATTENTION_LAB_TORCH_THREADS", "1")
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_describe_device_counts_threads_in_words(one_thread) -> None:
    assert describe_device(torch.device("cpu")) == "CPU, 1 thread"
    torch.set_num_threads(2)
    assert describe_device(torch.device("cpu")) == "CPU, 2 threads"


def test_home_says_one_thread_and_its_tables_fit_a_projector(one_thread, monkeypatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_DEVICE", "cpu")
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    at.run()
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert "Running on **CPU, 1 thread**" in captions
    assert not any("threads)" in c or "1 threads" in c for c in captions)

    shown = tables(at)
    assert set(shown) == {"home_reversal", "home_gpt", "home_bert"}
    bert = shown["home_bert"].set_index("checkpoint")
    assert list(bert.index) == ["bert-char"]  # the masked LM in its own table, not among the reversal models
    assert bert.loc["bert-char", "hidden characters right"] > bert.loc["bert-char", "chance"] + 0.25
    rev = shown["home_reversal"]
    assert rev["checkpoint"].str.startswith("reverse-").all()
    assert [c for c in rev.columns if c.startswith("len ")] == [f"len {n}" for n in (3, 5, 7, 10, 12, 15)]
    assert rev.set_index("checkpoint").loc["reverse-rope", "len 3"] == pytest.approx(1.0)
    gpt = shown["home_gpt"].set_index("checkpoint")
    assert gpt.loc["gpt-rope", "val loss"] > 0 and gpt.loc["gpt-induction", "repeat loss"] > 0
    for column in ("val", "repeat"):  # perplexity beside each loss: e^loss (to the table's 3 decimals)
        pair = gpt[[f"{column} loss", f"{column} perplexity"]].dropna()
        assert len(pair) and np.allclose(pair.iloc[:, 1], np.exp(pair.iloc[:, 0]), rtol=5e-3)
    assert gpt.loc["gpt-rope", "parameters"].endswith(("k", "M"))  # 823k, not 823456
    for df in shown.values():  # no free-text column wider than a name: every cell short
        cells = [str(v) for v in df.astype(str).to_numpy().ravel()]
        assert max(map(len, cells)) <= 20, max(cells, key=len)


def test_students_see_no_deploy_button_or_developer_menu() -> None:
    config = tomllib.loads((ROOT / "app" / ".streamlit" / "config.toml").read_text())
    assert config["client"]["toolbarMode"] == "viewer"
    import streamlit as st

    # the option exists in this Streamlit (an unknown one raises)
    assert st.get_option("client.toolbarMode") in ("auto", "developer", "viewer", "minimal")


def test_links_to_a_page_carry_the_view_it_was_left_in(monkeypatch) -> None:
    """The sidebar menu and the Home cards open a page as it was last shown (one history entry
    each); a page never shown is linked bare, and projector mode travels along."""
    monkeypatch.setenv("ATTENTION_LAB_DEVICE", "cpu")
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    at.run()

    def links(block, label: str) -> list[str]:
        return [e.proto.query_string for e in block.get("page_link") if e.proto.label == label]

    assert links(at.sidebar, "Reversal explorer") == [""] and links(at.main, "Reversal explorer") == [""]
    at.switch_page("views/reversal.py").run()
    at.text_input(key="rev_text").set_value("hello").run()
    at.switch_page("views/home.py").run()
    assert not at.exception
    for block in (at.sidebar, at.main):
        (query,) = links(block, "Reversal explorer")
        assert "text=hello" in query.split("&") and "checkpoint=reverse-sinusoidal" in query.split("&")
    at.toggle(key="present").set_value(True).run()
    (query,) = links(at.main, "Reversal explorer")
    assert "present=1" in query.split("&")
