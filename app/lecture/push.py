"""Followers hear of the lecturer's new view from their app process, not by asking.

One thread per app process (`watch()`, started by the first follower's run) looks every
PUSH_SECONDS at the sessions of this process that follow a class session, reads each class
session's view once from the box-wide store (serving.classroom: one read per class, not per
follower), and reruns each follower whose shown version is behind, as Streamlit's run-on-save
reruns a session: the follower's run then opens the lecturer's view (attention_lab.lecture.classroom). Every
BEAT_SECONDS it tells the store, in one write, that its followers are still there (the
lecturer's count).

Why: a poll per follower is a Streamlit fragment run, ~5-8 ms of a core; 200 followers
polling each second took most of the box's two cores before anyone's page changed
(benchmarks/bench_class.py "idle"), and they saw a change only at their next poll.

Followers in step are mirrored (attention_lab.lecture.mirror): when several followers of this process
are behind together with equal session states, one of them runs the page and the others get
a copy of its messages and state.

Streamlit has no public call that reruns another session. This module reads the runtime's
session list on the runtime's own event loop and calls `AppSession.request_rerun` there with
the session's last client state, which is what run-on-save does, through
attention_lab.frame.streamlit_private; where that finds a part missing on the installed
Streamlit, nothing is pushed (`available()`) and followers poll. Outside a server (AppTest)
there is no runtime and nothing is pushed: a follower's page checks the store on every run.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attention_lab.frame import streamlit_private as private
from attention_lab.lecture.mirror import Mirrors, Recording, state_value

PUSH_SECONDS = 0.2  # a follower's run starts within this of the lecturer's change
ENDED = -2  # the version a follower is pushed to when its class session ended or expired
MIRROR_FROM = 2  # followers in step behind together: one runs the page, the others mirror it
NOT_MIRRORED = ("train", "admin")  # pages that show a person's own things (their runs, the box's)
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Follower:
    """A session of this process that follows a class session, as its state says now."""

    session_id: str
    code: str  # the class session followed
    seen: int  # the version of the lecturer's view it shows
    follower: str  # its follower id in the store (the lecturer's count); "" before its first run
    running: bool = False  # a run of it is going on now


class FollowerWatch:
    """The thread that pushes new views to this process's followers (see the module docstring).

    It keeps, per session id, the version it last asked a session to open (so a follower
    waiting its turn is not asked again) and, per follower id, when it last said the follower
    is there: bookkeeping of this process's own sessions, pruned every round, no user data."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        list_followers: Callable[[], list[Follower]],
        rerun: Callable[[str], bool],
        store: Any,
        beat_seconds: float,
        mirrors: Mirrors | None = None,
    ) -> None:
        self._loop, self._list, self._rerun, self._store = loop, list_followers, rerun, store
        self._beat_seconds, self._mirrors = beat_seconds, mirrors
        self.asked: dict[str, int] = {}  # session id -> version it was rerun for
        self.beats: dict[str, float] = {}  # follower id -> when the store last heard of it
        self.thread = threading.Thread(target=self._run, name="attention-lab-follow", daemon=True)

    def _run(self) -> None:
        while not self._loop.is_closed():
            try:
                self.round()
            except Exception:  # noqa: BLE001 - a failed round is logged; the next one tries again
                _LOG.exception("pushing the lecturer's view to followers failed")
            time.sleep(PUSH_SECONDS)

    def round(self) -> list[str]:
        """One look: the session ids rerun now (leaders of mirrors included)."""
        if self._mirrors is not None:  # mirrors whose leader's record failed run on their own now
            for session_id in self._on_loop(self._mirrors.settle):
                self.asked.pop(session_id, None)
        followers = self._on_loop(self._list)
        now, behind, pages = time.time(), {}, {}
        by_code: dict[str, list[Follower]] = {}
        for f in followers:
            by_code.setdefault(f.code, []).append(f)
        for code, members in by_code.items():
            view = self._store.view(code)
            live = view is not None and not view.ended and view.expires > now
            version = view.version if live and view is not None else ENDED  # ended: the runs say so
            if live and view is not None:
                pages[code] = view.page
            for f in members:
                if f.seen != version and self.asked.get(f.session_id) != version:
                    behind[f.session_id] = version
            # when one is due, all of this process's followers of the class in one write: their
            # beats fall in step (one write per class every beat_seconds, not one per follower)
            named = [f.follower for f in members if f.follower]
            if any(now - self.beats.get(f, 0.0) > self._beat_seconds for f in named):
                self._store.still_here(code, named)
                self.beats |= dict.fromkeys(named, now)
        # All at once: each run opens the view early in the router (classroom.open_new_view)
        # and then waits its turn for the page (attention_lab.frame.turns). Pushing in turns here
        # instead left turns idle between runs: p95 at 100 followers 9.0 s against 5.2 s.
        idle = [f for f in followers if f.session_id in behind and not f.running]
        rerun, mirroring = self._on_loop(lambda: self._launch(idle, behind, pages))
        here = {f.session_id for f in followers}
        asked = {s: behind[s] for s in [*rerun, *mirroring]}
        self.asked = {k: v for k, v in self.asked.items() if k in here} | asked
        followers_here = {f.follower for f in followers}
        self.beats = {k: v for k, v in self.beats.items() if k in followers_here}
        return rerun

    def _launch(
        self, idle: list[Follower], behind: dict[str, int], pages: dict[str, str]
    ) -> tuple[list[str], list[str]]:
        """On the loop: rerun the idle followers behind; followers in step (equal states, a page
        that shows nothing of a person's own) share one leader's run. Returns (rerun, mirroring)."""
        cohorts: dict[tuple[str, int, str], list[str]] = {}
        if self._mirrors is not None:
            for f in idle:
                page = pages.get(f.code)
                if page is None or page in NOT_MIRRORED:
                    continue
                fingerprint = self._mirrors.fingerprint(f.session_id)
                if fingerprint is not None:
                    cohorts.setdefault((f.code, behind[f.session_id], fingerprint), []).append(f.session_id)
        rerun, mirroring, shared = [], [], set()
        for (code, version, fingerprint), ids in cohorts.items():
            if len(ids) < MIRROR_FROM or self._mirrors is None:
                continue
            if self._mirrors.start(Recording(ids[0], ids[1:], fingerprint, code, version)):
                rerun.append(ids[0])
                mirroring.extend(ids[1:])
                shared.update(ids)
        rerun += [f.session_id for f in idle if f.session_id not in shared and self._rerun(f.session_id)]
        return rerun, mirroring

    def _on_loop(self, fn: Callable[[], list[Any]]) -> list[Any]:
        """fn() on the runtime's event loop, where the sessions are changed: none changes meanwhile."""

        async def call() -> list[Any]:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(timeout=10)


def followers_here(following_key: str, seen_key: str, beat_key: str) -> list[Follower]:
    """This process's sessions that follow a class session (call on the runtime's event loop)."""
    found = []
    for session_id, session in private.sessions().items():
        state = private.session_state(session)
        code = state_value(state, following_key)
        if code:
            beat = state_value(state, beat_key)
            follower = beat[0] if beat else ""  # its first run names it
            running = private.is_running(session)
            found.append(Follower(session_id, code, state_value(state, seen_key, -1), follower, running))
    return found


def rerun_session(session_id: str) -> bool:
    """Rerun one session on its current page with its widgets as they are (run-on-save's call;
    on the runtime's event loop). Only an idle session: a run going on (a follower opening a
    view, a click) is never cut short; it is asked again next round if still behind."""
    session = private.find_session(session_id)
    if session is None or private.is_running(session):
        return False
    private.rerun_page(session)
    return True


def available() -> bool:
    """Whether the push and mirrors can run on the installed Streamlit (its internals checked once)."""
    return private.check().ok


@functools.cache
def watch(
    store: Any,
    following_key: str,
    seen_key: str,
    beat_key: str,
    beat_seconds: float,
    mirror_skip: tuple[str, ...] | None = None,
    runs_key: str = "",
) -> FollowerWatch | None:
    """Start this process's watch once, on `store` (the process's class sessions); None outside
    a Streamlit server (AppTest) or where the push is not `available()`: nothing to push to.
    `mirror_skip`: followers in step mirror one leader's run, their states compared but for
    these keys (values the same in every session, shared by the copies) and the beat; None: no
    mirrors. `runs_key`: the session state's count of full runs (a mirror that ran since its
    last copy gets a whole run)."""
    if not available() or not private.runtime_exists():
        return None
    loop = private.event_loop()
    keys = (following_key, seen_key, beat_key)
    watcher = FollowerWatch(
        loop,
        functools.partial(followers_here, *keys),
        rerun_session,
        store,
        beat_seconds,
        None if mirror_skip is None else Mirrors(loop, keys, mirror_skip, runs_key, rerun_session),
    )
    watcher.thread.start()
    return watcher
