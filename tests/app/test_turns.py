"""Page runs in turns (attention_lab.frame.turns): a pool lets `size` runs in at once and the
next in when one leaves, a run waits no longer than its bound, ATTENTION_LAB_PAGE_RUNS sizes
the page runs' pool (0: none), and the router runs every page inside the pool
attention_lab.lecture.classroom.run_turns chooses."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from attention_lab.frame import turns
from attention_lab.lecture import classroom
from transformer_core.errors import ConfigError

HOME = str(Path(__file__).resolve().parents[2] / "app" / "Home.py")


def run_in_thread(pool: turns.Turns, inside: threading.Event, leave: threading.Event) -> dict[str, Any]:
    """A run in its own thread: it takes a turn, says it is inside, stays until `leave`."""
    seen: dict[str, Any] = {}

    def run() -> None:
        with pool.turn() as took:
            seen["took"] = took
            inside.set()
            leave.wait(30)

    seen["thread"] = threading.Thread(target=run, daemon=True)
    seen["thread"].start()
    return seen


def test_a_pool_lets_its_size_in_and_the_next_when_one_leaves() -> None:
    pool = turns.Turns(size=1, wait_seconds=30, hold_seconds=30)
    first_in, first_leave = threading.Event(), threading.Event()
    second_in, second_leave = threading.Event(), threading.Event()
    first = run_in_thread(pool, first_in, first_leave)
    assert first_in.wait(10) and first["took"]
    second = run_in_thread(pool, second_in, second_leave)
    assert not second_in.wait(0.5), "a second run went in while the only turn was taken"
    first_leave.set()
    assert second_in.wait(10) and second["took"], "the next run did not go in when the first left"
    second_leave.set()
    two = turns.Turns(size=2, wait_seconds=30, hold_seconds=30)
    events = [(threading.Event(), threading.Event()) for _ in range(2)]
    both = [run_in_thread(two, inside, leave) for inside, leave in events]
    assert all(inside.wait(10) for inside, _ in events) and all(seen["took"] for seen in both)
    for _, leave in events:
        leave.set()


def test_a_run_waits_at_most_its_pools_bound() -> None:
    pool = turns.Turns(size=1, wait_seconds=0.2, hold_seconds=30)
    inside, leave = threading.Event(), threading.Event()
    holder = run_in_thread(pool, inside, leave)
    assert inside.wait(10)
    with pool.turn() as took:  # the holder is still inside: this run goes on beside it
        assert took is False and not leave.is_set() and holder["thread"].is_alive()
    leave.set()
    holder["thread"].join(10)
    with pool.turn() as took:  # a turn given back is a turn to take again
        assert took is True


def test_runs_go_in_in_the_order_they_came() -> None:
    pool = turns.Turns(size=1, wait_seconds=30, hold_seconds=30)
    events = [(threading.Event(), threading.Event()) for _ in range(3)]
    for inside, leave in events:
        run_in_thread(pool, inside, leave)
        time.sleep(0.05)  # each comes after the one before
    for i, (inside, leave) in enumerate(events):
        assert inside.wait(10), f"run {i} never went in"
        assert not any(later.is_set() for later, _ in events[i + 1 :]), f"a run went in before run {i} left"
        leave.set()


def test_a_long_run_stops_counting_against_its_pool() -> None:
    """A run inside for hold_seconds lets the next one in beside it while it still runs."""
    pool = turns.Turns(size=1, wait_seconds=30, hold_seconds=0.3)
    events = [(threading.Event(), threading.Event()) for _ in range(2)]
    runs = [run_in_thread(pool, inside, leave) for inside, leave in events]
    assert events[1][0].wait(10), "the long run kept the next one out"
    assert runs[1]["took"] and runs[0]["thread"].is_alive() and not events[0][1].is_set()
    for _, leave in events:
        leave.set()


def test_page_runs_size_the_pages_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    from attention_lab.serving import settings

    monkeypatch.delenv("ATTENTION_LAB_PAGE_RUNS", raising=False)
    pool = turns.pages(settings.page_runs())
    assert pool is not None
    bounds = (turns.PAGE_WAIT_SECONDS, turns.PAGE_HOLD_SECONDS)
    assert (pool.size, pool.wait_seconds, pool.hold_seconds) == (1, *bounds)
    assert turns.pages(1) is pool  # one pool per process and size
    monkeypatch.setenv("ATTENTION_LAB_PAGE_RUNS", "3")
    assert turns.pages(settings.page_runs()).size == 3
    monkeypatch.setenv("ATTENTION_LAB_PAGE_RUNS", "0")
    assert turns.pages(settings.page_runs()) is None
    for bad, message in (("-1", "must be >= 0"), ("one", "is not a whole number")):
        monkeypatch.setenv("ATTENTION_LAB_PAGE_RUNS", bad)
        with pytest.raises(ConfigError, match=message):
            settings.page_runs()


class CountedTurns(turns.Turns):
    """A pool that counts the runs that took a turn of it."""

    def __init__(self) -> None:
        super().__init__(size=1, wait_seconds=30, hold_seconds=30)
        self.entered = 0

    @contextmanager
    def turn(self) -> Iterator[bool]:
        with super().turn() as took:
            self.entered += 1
            yield took


def test_the_router_runs_every_page_in_the_pool_run_turns_chooses(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path))
    pages, followers = CountedTurns(), CountedTurns()
    monkeypatch.setattr(turns, "pages", lambda size: pages)
    monkeypatch.setattr(turns, "FOLLOWERS", followers)
    at = AppTest.from_file(HOME, default_timeout=60)
    at.run()
    at.switch_page("views/basics.py").run()
    assert not at.exception and (pages.entered, followers.entered) == (2, 0)
    at.session_state[classroom.TURN] = True  # the run that opens the lecturer's new view
    at.run()
    assert (pages.entered, followers.entered) == (2, 1)
    code = classroom.sessions().start(1.0)
    at.session_state[classroom.FOLLOWING] = code  # a follower's run takes no page turn, and the
    at.run()  # lecturer's view it then opens (a run of its own) a follower's turn
    assert not at.exception and (pages.entered, followers.entered) == (2, 2)
