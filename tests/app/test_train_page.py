"""/train driven through Streamlit's AppTest: a run to the end, stop, and the queue."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def open_train() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    at.run()
    at.switch_page("views/train.py")
    at.run()
    assert not at.exception
    return at


def set_steps(at: AppTest, steps: int) -> None:
    next(n for n in at.number_input if n.label == "Steps").set_value(steps)


def click(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label == label).click().run()


def wait_until(predicate, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _fresh_slots(monkeypatch: pytest.MonkeyPatch):
    from lab.runs import run_slots

    run_slots.clear()
    yield
    run_slots.clear()


def test_tiny_reversal_run_to_completion() -> None:
    at = open_train()
    at.select_slider(key="train_preset").set_value("tiny")
    set_steps(at, 20)
    click(at, "Start")
    run = at.session_state["train_run"]
    run.join(120)
    assert run.status == "done"
    at.run()
    assert not at.exception
    progress = at.get("progress")[0].proto.text
    assert "done" in progress and "step 20 / 20" in progress
    charts = at.get("vega_lite_chart")
    assert len(charts) >= 3  # loss, learning rate, evaluation
    table = at.dataframe[0].value
    assert list(table["length"]) == [3, 5, 7, 10, 12, 15]
    assert table["greedy exact match"].between(0, 1).all()
    assert table["in training range"].tolist() == [True, True, True, True, False, False]
    assert any(run.label in s.value for s in at.success)
    assert run.label in at.session_state["my_models"]
    assert at.get("download_button")
    assert at.get("plotly_chart")  # the snapshot scrubber's heatmap


def test_stop_ends_the_run_within_a_second() -> None:
    at = open_train()
    at.select_slider(key="train_preset").set_value("tiny")
    set_steps(at, 10_000)
    click(at, "Start")
    run = at.session_state["train_run"]
    wait_until(lambda: run.step >= 2)
    t0 = time.perf_counter()
    click(at, "Stop")
    assert not run.alive and time.perf_counter() - t0 < 5.0  # includes the page rerun
    assert run.status == "stopped" and run.step < 10_000
    assert not at.exception


def test_runs_beyond_the_cap_wait_in_a_visible_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_MAX_RUNS", "1")
    first, second = open_train(), open_train()
    for at in (first, second):
        at.select_slider(key="train_preset").set_value("tiny")
        set_steps(at, 10_000)
    click(first, "Start")
    run_a = first.session_state["train_run"]
    wait_until(lambda: run_a.status == "running")
    click(second, "Start")
    run_b = second.session_state["train_run"]
    wait_until(lambda: run_b.queue_position == 1)
    second.run()
    assert any("number 1 in the queue" in i.value for i in second.info)
    assert run_b.status == "queued" and not run_b.steps
    click(first, "Stop")
    wait_until(lambda: run_b.status == "running")
    click(second, "Stop")
    assert run_a.status == run_b.status == "stopped"
