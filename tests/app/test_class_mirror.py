"""A finished leader's run handed to its mirrors (attention_lab.lecture.mirror.Mirrors), on a real event
loop with real SessionStates and ForwardMsgs; the sessions are stand-ins, and the adapter's
calls that reach into Streamlit's AppSession (attention_lab.frame.streamlit_private) read them.
Through a real app process and real AppSessions: tests/deploy/test_class_mirror.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from attention_lab.frame import streamlit_private
from attention_lab.frame.streamlit_private import ForwardMsg, SessionState
from attention_lab.lecture.mirror import MIRRORS_PER_TURN, Mirrors, Recording, state_fingerprint

KEYS = ("following", "seen", "beat")
CODE, VERSION = "c0de", 3


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


class Session:
    """An AppSession as the hand-out sees it through the adapter: its state, whether it runs, the
    messages sent to its browser and how often the server was woken to send them."""

    def __init__(self, session_id: str, text: str) -> None:
        self.id, self.session_state = session_id, SessionState()
        values = {
            "following": CODE,
            "seen": VERSION - 1,
            "text": text,
            "beat": (f"follower-{session_id}", 0.0),
        }
        for key, value in values.items():
            self.session_state[key] = value
        self.running, self.messages, self.wakes = False, [], 0

    def receive(self, messages: list[ForwardMsg]) -> None:
        self.messages += messages
        self.wakes += 1

    def has_fragment(self, fragment_id: str) -> bool:
        return True


def leader_run(text: str) -> list[ForwardMsg]:
    """A page run's messages: its start, the text box showing `text`, its finish."""
    start, box, end = ForwardMsg(), ForwardMsg(), ForwardMsg()
    start.new_session.initialize.session_id = "leader"
    box.delta.new_element.text_input.label = "Text to reverse"
    box.delta.new_element.text_input.value = text
    box.metadata.delta_path[:] = [0, 1]
    end.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    return [start, box, end]


def on_loop(loop: asyncio.AbstractEventLoop, fn) -> None:  # noqa: ANN001
    async def call() -> None:
        fn()

    asyncio.run_coroutine_threadsafe(call(), loop).result(5)


def test_mirrors_are_handed_out_in_turns_from_the_leader_state_its_run_left(
    loop: asyncio.AbstractEventLoop, monkeypatch: pytest.MonkeyPatch
) -> None:
    n = 2 * MIRRORS_PER_TURN + 3  # three turns
    leader, *mirrors = sessions = [Session(f"s{k}", "attention") for k in range(n + 1)]
    by_id = {s.id: s for s in sessions}
    media = {"s0": {"el": "file"}}  # the leader's run holds a download's file
    for name, call in {
        "sessions": lambda: dict(by_id),
        "find_session": by_id.get,
        "is_running": lambda session: session.running,
        "send_to_browser": lambda session, messages: session.receive(list(messages)),
        "held_media": lambda session_id: dict(media.get(session_id, {})),
        "hold_media": lambda held, session_id: media.__setitem__(session_id, dict(held)),
    }.items():
        monkeypatch.setattr(streamlit_private, name, call)
    hub = Mirrors(loop, KEYS, (), "runs", rerun=lambda session_id: True)
    fingerprint = hub.fingerprint("s1")
    assert fingerprint is not None and fingerprint == hub.fingerprint("s0")  # in step: beats differ only
    rec = Recording("s0", [m.id for m in mirrors], fingerprint, CODE, VERSION, messages=leader_run("new"))
    leader.session_state["seen"], leader.session_state["text"] = VERSION, "new"  # what its run left
    mine = mirrors[-1]  # the last mirror runs on its own before its turn comes

    handed: list[int] = []  # mirrors that had their messages, each time another callback ran

    def other_users() -> None:  # another session's work on the same loop
        handed.append(sum(1 for m in mirrors if m.messages))
        if len(handed) == 1:  # between the turns: the leader runs again, a mirror types
            leader.session_state["text"] = "the leader's own next run"
            mine.session_state["text"] = "mine"
        if rec.failed is None:
            loop.call_soon(other_users)

    def finish() -> None:
        loop.call_soon(other_users)
        hub.finish(rec)

    on_loop(loop, finish)
    deadline = time.monotonic() + 5
    while rec.failed is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)

    assert handed[:3] == [MIRRORS_PER_TURN, 2 * MIRRORS_PER_TURN, n - 1]  # other work ran between turns
    # its own text is kept
    assert rec.failed == [mine.id] and not mine.messages
    assert mine.session_state["text"] == "mine"
    for m in mirrors[:-1]:
        assert m.session_state["text"] == "new"  # the state the leader's run left, not its next
        assert m.session_state["beat"] == (f"follower-{m.id}", 0.0)  # each keeps its own follower id
        (start, box, _) = m.messages
        assert start.new_session.initialize.session_id == m.id  # its own session, not the leader's
        assert box.delta.new_element.text_input.value == "new"
        assert m.wakes == 1 and media[m.id] == {"el": "file"}
    skip = frozenset({"beat", "runs"})
    assert len({state_fingerprint(m.session_state, skip) for m in mirrors[:-1]}) == 1
