"""The app process's push to followers (attention_lab.lecture.push), one round at a time, on a real event
loop and the runs folder's SQLite class sessions: who is rerun, once per new view, who is
counted as following, and a class session that ends. The push through real servers and
browsers: tests/deploy/test_class_session.py."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from attention_lab.frame.streamlit_private import ForwardMsg, SessionState
from attention_lab.lecture.mirror import Recording, copy_state, last_run, state_fingerprint
from attention_lab.lecture.push import ENDED, Follower, FollowerWatch
from attention_lab.serving.classroom import FOLLOWING_SECONDS, SQLiteClassSessions


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in its own thread, as Streamlit's runtime loop does."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


class Class:
    """A lecturer's class session and this process's followers as the watch would see them."""

    def __init__(self, root: Path, loop: asyncio.AbstractEventLoop, beat_seconds: float = 4.0) -> None:
        self.store = SQLiteClassSessions(root)
        self.code = self.store.start(hours=1)
        self.store.publish(self.code, "reversal", {"text": "attention"})
        self.followers: list[Follower] = []
        self.reruns: list[str] = []
        self.rerun_threads: set[str] = set()
        self.running: set[str] = set()  # sessions in the middle of a run
        self.watch = FollowerWatch(loop, self.listed, self.rerun, self.store, beat_seconds)

    def listed(self) -> list[Follower]:
        return [replace(f, running=f.session_id in self.running) for f in self.followers]

    def rerun(self, session_id: str) -> bool:
        if session_id in self.running:
            return False
        self.reruns.append(session_id)
        self.rerun_threads.add(threading.current_thread().name)
        return True

    def version(self) -> int:
        view = self.store.view(self.code)
        assert view is not None
        return view.version

    def shows(self, session_id: str, version: int) -> None:
        """The follower's run opened `version` (its state says so now)."""
        self.followers = [
            Follower(f.session_id, f.code, version if f.session_id == session_id else f.seen, f.follower)
            for f in self.followers
        ]

    def round(self) -> list[str]:
        before = len(self.reruns)
        asked = self.watch.round()
        assert self.reruns[before:] == asked
        return asked


def test_followers_behind_are_rerun_once_per_new_view(tmp_path: Path, loop) -> None:
    c = Class(tmp_path, loop)
    v1 = c.version()
    c.followers = [Follower("s1", c.code, v1, "f1"), Follower("s2", c.code, -1, "f2")]  # s2 just joined
    c.running = {"s2"}  # its first run goes on: never cut short
    assert c.round() == [] and c.round() == []
    c.running = set()  # it ended without opening the view (say, it was interrupted)
    assert c.round() == ["s2"]
    assert c.round() == []  # asked already: not again while its run waits its turn
    c.shows("s2", v1)
    c.store.publish(c.code, "reversal", {"text": "classroom"})  # the lecturer types
    assert sorted(c.round()) == ["s1", "s2"]
    assert c.round() == []
    c.shows("s1", c.version())
    c.store.publish(c.code, "gpt", {})  # and moves on before s2 caught up: s2 is asked again
    assert sorted(c.round()) == ["s1", "s2"]
    assert c.rerun_threads != {threading.current_thread().name}  # reruns happen on the runtime's loop


def test_a_session_that_left_is_forgotten_and_others_are_untouched(tmp_path: Path, loop) -> None:
    c, other = Class(tmp_path, loop), SQLiteClassSessions(tmp_path)
    other_code = other.start(hours=1)
    c.followers = [Follower("s1", c.code, -1, "f1"), Follower("s9", other_code, 0, "f9")]
    assert c.round() == ["s1"]  # s9 shows its own class's view (version 0): nothing to do
    c.followers = []  # s1 closed its tab
    c.round()
    assert c.watch.asked == {} and c.watch.beats == {}


def test_followers_are_counted_by_the_watchs_beats(tmp_path: Path, loop) -> None:
    c = Class(tmp_path, loop, beat_seconds=0.0)
    c.followers = [Follower(f"s{k}", c.code, c.version(), f"f{k}") for k in range(3)]
    assert c.store.following(c.code) == 0
    c.round()
    assert c.store.following(c.code) == 3  # no follower ran anything: the watch said they are here
    assert FOLLOWING_SECONDS > 4.0  # a beat every BEAT_SECONDS keeps them counted


def test_a_process_beats_for_its_whole_class_in_one_write(tmp_path: Path, loop, monkeypatch) -> None:
    c = Class(tmp_path, loop, beat_seconds=0.5)
    writes: list[list[str]] = []
    still_here = c.store.still_here
    monkeypatch.setattr(c.store, "still_here", lambda code, who: writes.append(who) or still_here(code, who))
    c.followers = [Follower(f"s{k}", c.code, c.version(), f"f{k}") for k in range(3)]
    c.round()
    c.followers.append(Follower("s3", c.code, c.version(), "f3"))  # joins: due at once
    c.round()
    c.round()  # nobody due
    assert writes == [["f0", "f1", "f2"], ["f0", "f1", "f2", "f3"]]  # in step with the others from now on
    time.sleep(0.6)
    c.round()
    assert len(writes) == 3 and c.store.following(c.code) == 4


def test_an_ended_class_session_reruns_its_followers_to_say_so(tmp_path: Path, loop) -> None:
    c = Class(tmp_path, loop)
    c.followers = [Follower("s1", c.code, c.version(), "f1")]
    assert c.round() == []
    c.followers.append(Follower("s2", c.code, -1, ""))  # joining: its first run gives it a follower id
    c.running = {"s2"}
    c.round()
    assert c.store.following(c.code) == 1  # counted once, under its own id, not a second one
    c.store.end(c.code)
    assert c.round() == ["s1"] and c.watch.asked["s1"] == ENDED  # s2 is still running
    assert c.round() == []


class FakeMirrors:
    """The watch's side of attention_lab.lecture.mirror.Mirrors: fingerprints as given, leaders rerun through
    the class's rerun, recordings kept; `fail` is what the next settle() reports."""

    def __init__(self, c: Class, fingerprints: dict[str, str | None]) -> None:
        self.c, self.fingerprints, self.started, self.fail = c, fingerprints, [], []

    def fingerprint(self, session_id: str) -> str | None:
        return self.fingerprints.get(session_id)

    def start(self, rec: Recording) -> bool:
        self.started.append(rec)
        return self.c.rerun(rec.leader)

    def settle(self) -> list[str]:
        failed, self.fail = self.fail, []
        return failed


def test_followers_in_step_share_one_run_and_failed_mirrors_run_on_their_own(tmp_path: Path, loop) -> None:
    c = Class(tmp_path, loop)
    mirrors = FakeMirrors(c, {"s1": "a", "s2": "a", "s3": "a", "s4": "b", "s5": None})
    c.watch = FollowerWatch(loop, c.listed, c.rerun, c.store, 4.0, mirrors)  # type: ignore[arg-type]
    v1 = c.version()
    c.followers = [Follower(f"s{k}", c.code, v1, f"f{k}") for k in range(1, 6)]
    c.store.publish(c.code, "reversal", {"text": "classroom"})
    v2 = c.version()
    assert sorted(c.round()) == ["s1", "s4", "s5"]  # s1 leads s2 and s3; s4 alone in its state; s5 unknown
    (rec,) = mirrors.started
    assert (rec.leader, rec.mirrors, rec.fingerprint, rec.version) == ("s1", ["s2", "s3"], "a", v2)
    assert c.round() == []  # the mirrors wait on their leader, not asked again
    mirrors.fail = ["s3"]  # s3 could not take the record (say, it had started a run of its own)
    assert c.round() == ["s3"]
    for k in (1, 2, 3, 4, 5):
        c.shows(f"s{k}", v2)
    c.store.publish(c.code, "train", {})  # /train shows a person's own runs: never mirrored
    assert sorted(c.round()) == ["s1", "s2", "s3", "s4", "s5"] and len(mirrors.started) == 1


def test_a_state_fingerprint_compares_values_not_objects_and_a_copy_keeps_the_beat() -> None:
    one, two = SessionState(), SessionState()
    for state, order in ((one, ["a", "b"]), (two, ["b", "a"])):
        state["text"] = "attention"
        state["explained"] = set(order)  # a set's order is no difference
        state["links"] = {"reversal": {"text": "attention"}}
    one["beat"], two["beat"] = ("f1", 1.0), ("f2", 2.0)
    skip = frozenset({"beat"})
    assert state_fingerprint(one, skip) == state_fingerprint(two, skip) is not None
    two["draft"] = ["my own note"]
    assert state_fingerprint(one, skip) != state_fingerprint(two, skip)
    two["draft"] = object()  # compared by identity: no session can be said to equal it
    assert state_fingerprint(two, skip) is None

    copy_state(one, two, keep=("beat",))
    assert state_fingerprint(two, skip) == state_fingerprint(one, skip)
    assert two["beat"] == ("f2", 2.0) and "draft" not in two
    one["links"]["reversal"]["text"] = "changed"  # a deep copy: the leader's later runs stay its own
    assert two["links"] == {"reversal": {"text": "attention"}}
    fresh = SessionState()
    copy_state(one, fresh, keep=("beat",))
    assert "beat" not in fresh  # never another follower's id


def test_a_mirror_gets_the_last_run_and_the_url_its_first_run_set() -> None:
    def message(kind: str) -> ForwardMsg:
        msg = ForwardMsg()
        if kind == "new_session":
            msg.new_session.name = "run"
        elif kind == "url":
            msg.page_info_changed.query_string = "text=classroom"
        elif kind == "finished":
            msg.script_finished = ForwardMsg.FINISHED_EARLY_FOR_RERUN
        else:
            msg.delta.new_element.markdown.body = kind
        return msg

    first = [message(k) for k in ("new_session", "url", "finished")]  # the router switched the page
    second = [message(k) for k in ("new_session", "the page", "its map")]
    assert last_run(first + second) == [first[1], *second]
    shared = {"pages": object()}
    one, two = SessionState(), SessionState()
    one["pages"] = shared["pages"]
    copy_state(one, two, keep=(), share=("pages",))
    assert two["pages"] is shared["pages"]  # the router's page lookup is not copied per follower
    copy_state(one, two, keep=())
    assert two["pages"] is not shared["pages"]
