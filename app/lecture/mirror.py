"""Followers in step mirror one leader's page run (attention_lab.lecture.push finds them behind).

When several followers of one app process are behind together and their session states are
equal (followers who only followed: same views, nothing of their own), one of them, the
leader, runs the page and the others get a copy of its messages and of its session state
afterwards, as if each had run the page itself. A follower page run is ~50 ms of a core; a
mirror costs the messages' sending and a state copy. A mirror receives only what its own run
would have produced: its state equalled the leader's before the run (a session's own runs,
tour draft, typed text or explored views make it differ, and it runs on its own); the pages
that show a person's own things (/train's "my runs", /admin) are never mirrored, nor is
anything while sign-in is on (the sidebar names the account). A leader whose own person asks
for a run meanwhile spoils its record, and its mirrors run on their own.

Streamlit has no public call for any of this: the leader's messages are recorded where its
AppSession enqueues them and `SessionState`'s fields are copied, each through
attention_lab.frame.streamlit_private (checked against the installed Streamlit once; no mirrors
where a part is missing; tests/deploy/test_class_mirror.py runs it through a real app process).
Every call runs on the runtime's event loop.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from attention_lab.frame import streamlit_private as private
from attention_lab.frame.streamlit_private import BackMsg, ForwardMsg, SessionState

FINAL = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_WITH_COMPILE_ERROR)  # a run's last finish
# a leader's run not finished by then (its turn, turns.FOLLOWERS.wait_seconds, and more)
RECORD_SECONDS = 40.0
# Mirrors handed their copy per turn of the event loop (~2 ms each): other users' messages go
# out between turns instead of waiting for a whole process's class (100 mirrors: ~0.2 s).
MIRRORS_PER_TURN = 8


def state_value(state: Any, key: str, default: Any = None) -> Any:
    """`state[key]`, or `default` (a session state has no `get` that leaves widgets unread)."""
    try:
        return state[key]
    except KeyError:
        return default


@dataclass
class Recording:
    """A leader's run of a new view, recorded for the followers mirroring it."""

    leader: str  # the session that runs the page
    mirrors: list[str]  # the sessions that get its messages and state
    fingerprint: str  # the state all of them had before the run
    code: str
    version: int
    started: float = field(default_factory=time.monotonic)
    messages: list[ForwardMsg] = field(default_factory=list)
    touched: bool = False  # the leader's own person asked for a run meanwhile: the output is theirs
    final: bool = False  # the run (through its reruns) finished
    failed: list[str] | None = None  # once done: the mirrors that must run the page themselves
    _run: list[ForwardMsg] | None = field(default=None, repr=False)
    _elements: dict[tuple[int, ...], tuple[bytes, ForwardMsg]] | None = field(default=None, repr=False)

    def run(self) -> list[ForwardMsg]:
        """What a mirror needs of the recorded messages (`last_run`); made once the run is final."""
        if self._run is None:
            self._run = last_run(self.messages)
        return self._run

    def elements(self) -> dict[tuple[int, ...], tuple[bytes, ForwardMsg]]:
        """The last run's elements by place: (serialized, message); made once, asked per mirror."""
        if self._elements is None:
            self._elements = {
                tuple(m.metadata.delta_path): (m.SerializeToString(), m)
                for m in self.run()
                if m.HasField("delta")
            }
        return self._elements

    def page(self) -> str:
        """The page its last run showed."""
        runs = [m.new_session.page_script_hash for m in self.messages if m.HasField("new_session")]
        return runs[-1] if runs else ""


class Unmirrorable(ValueError):
    """A session state value that cannot be compared across sessions (an object's identity)."""


def _canonical(value: Any) -> Any:
    """`value` in a form equal for equal values in any session: sets and dicts sorted; a
    value shown by its identity ('<... at 0x...>') cannot be compared and makes no mirror."""
    if isinstance(value, dict):
        return sorted((repr(k), _canonical(v)) for k, v in value.items())
    if isinstance(value, (set, frozenset)):
        return sorted(repr(_canonical(v)) for v in value)
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, *(_canonical(v) for v in value)]
    text = repr(value)
    if " at 0x" in text:
        raise Unmirrorable(text[:80])
    return text


def state_fingerprint(state: Any, skip: frozenset[str]) -> str | None:
    """A digest of every value of a session state (widgets too) but `skip`; None where a value
    cannot be compared. Two sessions with one fingerprint would draw a page alike."""
    items = []
    for key in state:
        if key in skip:
            continue
        try:
            value = state[key]
        except KeyError:  # a widget value the browser sent that no run of this session has read
            value = "<unread>"
        try:
            items.append((key, _canonical(value)))
        except Unmirrorable:
            return None
    return hashlib.sha256(repr(sorted(items)).encode()).hexdigest()


def copy_state(
    source: SessionState, target: SessionState, keep: tuple[str, ...], share: tuple[str, ...] = ()
) -> None:
    """Make `target` a deep copy of `source` (widget values, keys, metadata: every field), but
    the `keep` keys keep `target`'s own values (or stay absent). Widget metadata (frozen) and the
    `share` keys' values (the same in every session) are shared, not copied: ~2x faster."""
    kept = {key: target[key] for key in keep if key in target}
    memo: dict[int, Any] = {id(m): m for m in private.widget_metadata(source)}
    memo |= {id(source[key]): source[key] for key in share if key in source}
    private.replace_state(target, copy.deepcopy(source, memo))
    for key in keep:
        if key in kept:
            target[key] = kept[key]
        elif key in target:
            del target[key]


def last_run(messages: list[ForwardMsg]) -> list[ForwardMsg]:
    """A recorded run's messages a mirror needs: the last run's (the leader's first run only
    switched the page) and the URL that first run gave the page."""
    runs = [i for i, m in enumerate(messages) if m.HasField("new_session")]
    full = [i for i in runs if not messages[i].metadata.run.fragment_ids]  # not a poll's fragment run
    start = full[-1] if full else 0
    return [m for m in messages[:start] if m.HasField("page_info_changed")] + messages[start:]


def changes(before: Recording, after: Recording) -> list[ForwardMsg]:
    """What a browser showing `before`'s run needs to show `after`'s: where both drew the same
    elements at the same places on the same page, its new URL and the elements that changed
    (a text change on /reversal: 18 messages of 96), sent outside a run, so the browser keeps
    the others. Else `after`'s whole last run."""
    old, new = before.elements(), after.elements()
    if old.keys() != new.keys() or before.page() != after.page():
        return after.run()
    urls = [m for m in after.run() if m.HasField("page_info_changed")]
    return urls + [msg for path, (data, msg) in new.items() if old[path][0] != data]


def for_session(msg: ForwardMsg, session_id: str) -> ForwardMsg:
    """The leader's message as `session_id`'s own: a run's first message names its session."""
    if not msg.HasField("new_session"):
        return msg  # shared, never changed: the queues and the websocket only read messages
    own = ForwardMsg()
    own.CopyFrom(msg)
    own.new_session.initialize.session_id = session_id
    return own


@dataclass
class HandOut:
    """A finished recording being handed to its mirrors, MIRRORS_PER_TURN a turn."""

    rec: Recording
    state: SessionState  # the leader's state as its run left it (the leader may run again meanwhile)
    files: dict[str, Any]  # the leader's media files (download buttons) then, by element
    fragments: set[str]  # the fragments its messages draw or rerun
    runs: int  # the leader's full runs then
    todo: list[str]  # mirrors still to hand out, last first
    failed: list[str] = field(default_factory=list)
    updates: dict[int, list[ForwardMsg]] = field(default_factory=dict)  # id(shown recording) -> changes


class Mirrors:
    """Leaders' runs recorded and copied to their mirrors (see the module docstring). Every call
    runs on the runtime's event loop, where sessions enqueue their messages: no lock needed."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        keys: tuple[str, str, str],
        skip: tuple[str, ...],
        runs_key: str,
        rerun: Callable[[str], bool],
    ) -> None:
        self._loop, self._rerun = loop, rerun  # rerun: attention_lab.lecture.push.rerun_session
        self._following, self._seen, self._beat = keys
        self._skip, self._share = frozenset(skip) | {self._beat, runs_key}, (*skip, runs_key)
        self._runs = runs_key  # session_state: the session's full runs so far (the router counts)
        self.active: dict[str, Recording] = {}  # leader session id -> its recording
        # session id -> (the recording its browser shows, its run count then): while it has not
        # run since, the next recording's changed elements alone bring it up to date
        self.shown: dict[str, tuple[Recording, int]] = {}

    def fingerprint(self, session_id: str) -> str | None:
        session = private.find_session(session_id)
        return None if session is None else state_fingerprint(private.session_state(session), self._skip)

    def start(self, rec: Recording) -> bool:
        """Record the leader's next run and rerun it; False (nothing started) if it cannot."""
        session = private.find_session(rec.leader)
        if session is None or rec.leader in self.active:
            return False

        def recorded(msg: ForwardMsg) -> None:
            if rec.failed is not None or (rec.final and not msg.HasField("session_status_changed")):
                return  # after the final finish only its status belongs to the run (a poll may follow)
            rec.messages.append(msg)
            if not rec.final and msg.WhichOneof("type") == "script_finished" and msg.script_finished in FINAL:
                rec.final = True  # after this handler's last message (the status), copy it out
                self._loop.call_soon(self.finish, rec)

        def touched(msg: BackMsg) -> None:
            rerun = msg.rerun_script if msg.WhichOneof("type") == "rerun_script" else None
            if rerun is not None and not (rerun.fragment_id and rerun.is_auto_rerun):
                rec.touched = True  # the page's own poll waits for the run's end: not a touch

        private.tap(session, recorded, touched)
        self.active[rec.leader] = rec
        if not self._rerun(rec.leader):
            self._detach(rec)
            del self.active[rec.leader]
            return False
        return True

    def _detach(self, rec: Recording) -> None:
        session = private.find_session(rec.leader)
        if session is not None:
            private.untap(session)

    def finish(self, rec: Recording) -> None:
        """The leader's run ended: give each mirror still in step its state and messages."""
        self._detach(rec)
        session = private.find_session(rec.leader)
        leader = None if session is None else private.session_state(session)
        if rec.touched or leader is None or rec.failed is not None:
            rec.failed = list(rec.mirrors)
            return
        if state_value(leader, self._following) != rec.code or state_value(leader, self._seen) != rec.version:
            rec.failed = list(rec.mirrors)  # the run did not open the view (the class ended, ...)
            return
        fragments = {m.delta.fragment_id for m in rec.messages if m.HasField("delta")}
        fragments |= {m.auto_rerun.fragment_id for m in rec.messages if m.HasField("auto_rerun")}
        fragments.discard("")
        state = SessionState()
        copy_state(leader, state, (), self._share)
        runs = state_value(leader, self._runs, 0)
        files = private.held_media(rec.leader)
        job = HandOut(rec, state, files, fragments, runs, list(reversed(rec.mirrors)))
        here = private.sessions()
        self.shown = {k: v for k, v in self.shown.items() if k in here}  # closed tabs forgotten
        self.shown[rec.leader] = (rec, runs)  # its browser got the whole run
        self._hand_out(job)

    def _hand_out(self, job: HandOut) -> None:
        """Give the next MIRRORS_PER_TURN mirrors their copy; the rest on a later turn."""
        for _ in range(min(MIRRORS_PER_TURN, len(job.todo))):
            self._mirror(job, job.todo.pop())
        if job.todo:
            self._loop.call_soon(self._hand_out, job)
        else:
            job.rec.failed = job.failed

    def _mirror(self, job: HandOut, session_id: str) -> None:
        """One mirror still in step gets the leader's state and messages (else it is failed)."""
        rec, session = job.rec, private.find_session(session_id)
        if session is None:
            return  # the tab closed
        if (
            private.is_running(session)  # its own run goes on
            or self.fingerprint(session_id) != rec.fingerprint
            or not private.has_fragments(session, job.fragments)  # its fragments' reruns need them
        ):
            job.failed.append(session_id)
            return
        shown = self.shown.get(session_id)
        state = private.session_state(session)
        ran = state_value(state, self._runs, 0)
        copy_state(job.state, state, (self._beat,), self._share)
        private.hold_media(job.files, session_id)  # served after the leader's next run, until its own
        if shown and shown[1] == ran:  # it shows `shown`'s view still: the changes alone
            if id(shown[0]) not in job.updates:
                job.updates[id(shown[0])] = changes(shown[0], rec)
            messages = job.updates[id(shown[0])]
        else:
            messages = rec.run()
        private.send_to_browser(session, [for_session(msg, session_id) for msg in messages])
        self.shown[session_id] = (rec, job.runs)

    def settle(self) -> list[str]:
        """Forget finished recordings (and give up on those past RECORD_SECONDS): the mirrors
        that must now run the page on their own."""
        failed = []
        for leader, rec in list(self.active.items()):
            if rec.failed is None and time.monotonic() - rec.started > RECORD_SECONDS:
                self._detach(rec)
                rec.failed = list(rec.mirrors)
            if rec.failed is not None:
                failed += rec.failed
                del self.active[leader]
        return failed
