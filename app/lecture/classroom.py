"""The lecture as one room: a lecturer starts a class session, students open its follow
link and see the lecturer's page and view within a second or two of each change.

The lecturer's side: "Start a class session" in the sidebar, the follow link as text and
QR code, how many follow, "End the class session"; every view the lecturer shows is shared
(`share`, called by the router and by attention_lab.frame.state.write_state). A follower's side: a banner
with "Explore on my own" / "Follow again"; each of its runs opens the lecturer's view when it
changed. Its app process reruns it when the view changes (attention_lab.lecture.push); a rare poll (a
fragment) catches a lost push. Where the installed Streamlit lacks an internal the push uses
(attention_lab.frame.streamlit_private), there is no push and the poll is frequent instead
(`poll_seconds`). The sessions live box-wide (serving.classroom).
"""

from __future__ import annotations

import datetime
import functools
import secrets
import time
from typing import Any
from urllib.parse import urlsplit

import segno
import streamlit as st

from attention_lab.accounts import sign_in as access
from attention_lab.frame import present, turns
from attention_lab.frame.state import REOPEN
from attention_lab.lecture import push as class_push
from attention_lab.serving import settings
from attention_lab.serving.classroom import ClassSessions, ClassView, is_class_code, open_class_sessions

PRIVATE_PAGES = ("admin",)  # a lecturer's visit there is not shown to the class
LEADING = "class_leading"  # session_state: the code of the class session this browser leads
FOLLOWING = "class_following"  # session_state: the code this browser follows now (None: exploring)
JOINED = "class_joined"  # session_state: the code followed last (for "Follow again")
SEEN = "class_seen"  # session_state: the version of the lecturer's view shown here
SHARED = "class_shared"  # session_state: the (page, params) the lecturer shared last
ENDED = "class_ended"  # session_state: the session followed has just ended (said once)
BEAT = "class_beat"  # session_state: (follower id, when this follower last said it is here)
# The app process pushes each new view (attention_lab.lecture.push); a follower's own poll only catches a
# lost push. Each poll is a Streamlit fragment run, ~5-8 ms of a core, so rarely: at 15 s, a
# class of 200 polled 13 times a second, ~20% of its app processes' time while idle (py-spy).
FALLBACK_POLL_SECONDS = 60.0
# Without the push (attention_lab.lecture.push.available() is False) the poll alone finds each
# new view: a follower shows it within this and its run; the polls cost ~0.3 cores per 100 followers.
UNPUSHED_POLL_SECONDS = 2.0
BEAT_SECONDS = 4.0  # a follower says it is still here this often (the lecturer's count)
PAGE_NOTE = "_class_page"  # session_state: the router's page lookup, url_path -> st.Page
CHECKED = "_class_checked"  # session_state: this run's router looked at the view already
RUNS = "_class_runs"  # session_state: this session's full runs (a mirror that ran since gets a whole run)
TURN = "_class_turn"  # session_state: this run opens the lecturer's new view (it waits its turn)


@functools.cache
def sessions() -> ClassSessions:
    """The box's class sessions (one store object per process: a connection factory, no user data)."""
    return open_class_sessions()


def following() -> bool:
    """Whether this browser follows a class session now."""
    return bool(st.session_state.get(FOLLOWING))


def follow_url(code: str) -> str:
    """`<app URL>/?follow=<code>`: the app's address as this browser sees it (behind nginx too)."""
    parts = urlsplit(st.context.url or "http://localhost:8501/")
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"{parts.scheme}://{parts.netloc}/{base + '/' if base else ''}?follow={code}"


def qr_image(text: str) -> str:
    """`text` as a QR code: an <img> of an SVG (dark modules on white, a quiet zone round it),
    named for screen readers."""
    uri = segno.make(text, error="m").svg_data_uri(scale=4, dark="#000000", light="#ffffff")
    return f'<img src="{uri}" alt="QR code of the follow link" style="width:100%;max-width:180px">'


def share(page: str, params: dict[str, Any]) -> None:
    """Publish the lecturer's view (a page and its URL parameters) when it changed; nothing
    for anyone else. Projector mode stays the lecturer's own."""
    code = st.session_state.get(LEADING)
    if not code or page in PRIVATE_PAGES:
        return
    view = (page, {k: str(v) for k, v in params.items() if k not in ("present", "follow")})
    if st.session_state.get(SHARED) != view:
        st.session_state[SHARED] = view
        sessions().publish(code, *view)


def run_turns() -> turns.Turns | None:
    """The pool this run takes its turn from (asked once, by the router): a follower opening
    the lecturer's new view the followers', a follower's other runs none (the push and the
    poll pace them), anyone else's the page runs' (attention_lab.frame.turns)."""
    if st.session_state.pop(TURN, False):
        return turns.FOLLOWERS
    return None if following() else turns.pages(settings.page_runs())


def poll_seconds() -> float:
    """How often a follower's page asks for the lecturer's view: rarely where the push runs."""
    return FALLBACK_POLL_SECONDS if class_push.available() else UNPUSHED_POLL_SECONDS


def _live(view: ClassView | None) -> bool:
    return view is not None and not view.ended and view.expires > time.time()


# ---------------------------------------------------------------- the lecturer's side


def _start() -> None:
    st.session_state[LEADING] = sessions().start(settings.class_hours())
    st.session_state.pop(SHARED, None)  # share the view shown now


def _end() -> None:
    sessions().end(st.session_state.pop(LEADING))


def lecturer_panel() -> None:
    """The sidebar's class session: start one, or its follow link, QR code, follower count
    and end button."""
    code = st.session_state.get(LEADING)
    if code and not _live(sessions().view(code)):
        st.session_state.pop(LEADING)
        st.sidebar.info("The class session has ended.", icon=":material/groups:")
        code = None
    if not code:
        st.sidebar.button(
            "Start a class session",
            icon=":material/groups:",
            on_click=_start,
            help="Students who open its follow link see what you show, as you show it.",
        )
        return
    with st.sidebar.container(border=True):
        st.markdown("**Class session**: students open")
        link = follow_url(code)
        st.code(link, language=None, wrap_lines=True)
        st.html(qr_image(link))
        _follower_count(code)
        st.button("End the class session", icon=":material/stop_circle:", on_click=_end)


@st.fragment(run_every=5)
def _follower_count(code: str) -> None:
    view = sessions().view(code)
    if view is None:
        return
    ends = datetime.datetime.fromtimestamp(view.expires).strftime("%H:%M")
    n = sessions().following(code)
    st.caption(f"**{n}** following · the link works until {ends}")


# ---------------------------------------------------------------- a follower's side


def join_from_link() -> None:
    """`?follow=<code>` in the URL: follow that class session, or say why it cannot be."""
    code = st.query_params.get("follow")
    if code is None or code == st.session_state.get(JOINED):  # joined already (maybe exploring since)
        return
    if not is_class_code(code) or not _live(sessions().view(code)):
        st.error(
            "This class session link is unknown or has ended: ask the lecturer for the current one.",
            icon=":material/link_off:",
        )
        return
    st.session_state[FOLLOWING] = st.session_state[JOINED] = code
    st.session_state[SEEN] = -1  # open the lecturer's view now


def _explore() -> None:
    st.session_state[FOLLOWING] = None


def _follow_again() -> None:
    st.session_state[FOLLOWING] = st.session_state.get(JOINED)
    st.session_state[SEEN] = -1


def open_new_view(pages: dict[str, Any]) -> None:
    """Early in a follower's run: when the lecturer's view moved (a pushed rerun), open it now,
    before the sidebar and the rest of the router are drawn for nothing. Counts the run (RUNS)."""
    st.session_state[RUNS] = st.session_state.get(RUNS, 0) + 1
    code = st.session_state.get(FOLLOWING)
    if code:
        st.session_state[PAGE_NOTE] = pages
        _poll(code)
        st.session_state[CHECKED] = True  # the banner's poll, run inline below, need not ask again


def follower_banner(pages: dict[str, Any]) -> None:
    """Above the page: following (with "Explore on my own") or, after leaving, "Follow
    again"; while following, the poll that opens each new view of the lecturer's."""
    if st.session_state.pop(ENDED, False):
        st.warning("The lecturer ended the class session: you keep this view.", icon=":material/groups:")
    code, joined = st.session_state.get(FOLLOWING), st.session_state.get(JOINED)
    if not code and not joined:
        return
    with st.container(key=present.TOP_BAR_KEYS[1]):  # clear of the header (attention_lab.frame.present)
        left, right = st.columns([2.6, 1], vertical_alignment="center")
    if not code:
        left.caption("You are exploring on your own; the class session goes on.")
        right.button("Follow again", icon=":material/groups:", on_click=_follow_again, width="stretch")
        return
    left.info("Following the lecturer: this page shows what they show.", icon=":material/groups:")
    right.button("Explore on my own", icon=":material/explore:", on_click=_explore, width="stretch")
    st.session_state[PAGE_NOTE] = pages
    # this process's push, once (none where it is not available); followers in step mirror one
    # run, never while the sidebar names each person's account (sign-in on). The router's page
    # lookup is the same in every session.
    mirror_skip = None if access.sign_in_on() else (PAGE_NOTE,)
    class_push.watch(sessions(), FOLLOWING, SEEN, BEAT, BEAT_SECONDS, mirror_skip, RUNS)
    st.fragment(run_every=poll_seconds())(_poll)(code)


def _poll(code: str) -> None:
    """Open the lecturer's view when its version moved (a whole-app run on that page). In a
    full run the router asked already (open_new_view); as a fragment run, it asks here."""
    if st.session_state.pop(CHECKED, False) or st.session_state.get(FOLLOWING) != code:
        return
    follower, last_beat = st.session_state.get(BEAT, (secrets.token_hex(8), 0.0))
    beat = time.time() - last_beat > BEAT_SECONDS
    view = sessions().view(code, follower if beat else None)
    if beat:
        st.session_state[BEAT] = (follower, time.time())
    if not _live(view):
        st.session_state[FOLLOWING] = st.session_state[JOINED] = None
        st.session_state[ENDED] = True
        st.rerun(scope="app")
    assert view is not None
    if view.version == st.session_state.get(SEEN):
        return
    st.session_state[SEEN] = view.version
    page = st.session_state[PAGE_NOTE].get(view.page)
    if page is not None:
        st.session_state[REOPEN] = True  # the same page too: its widgets take the URL's values
        st.session_state[TURN] = True
        st.switch_page(page, query_params=view.params)
