"""Lecture tours in the app: open one by link (`?tour=<name or id>&scene=<k>`), step through
its scenes with Previous / Next (or the arrow keys), and record one from the pages.

A tour's scene is opened like a link: its page with its parameters, plus `tour` and
`scene`, which every page keeps in its URL while the tour is on (attention_lab.frame.state.write_state), so
a class session's followers follow the scenes too. Starter tours ship in app/tours/*.json
(named by file); recorded ones are saved box-wide (serving.tours) under an unguessable id.
"""

from __future__ import annotations

import functools
import html
import json
from pathlib import Path
from typing import Any

import streamlit as st

from attention_lab.frame import present
from attention_lab.frame.markdown_safe import md_code, md_text, shown
from attention_lab.frame.state import REOPEN
from attention_lab.frame.streamlit_dom import fill, inline
from attention_lab.serving.tours import (
    Scene,
    Tour,
    TourError,
    is_tour_id,
    load_saved_tour,
    parse_tour,
    save_tour,
)

SHIPPED = Path(__file__).resolve().parents[1] / "tours"  # starter tours, by file name
ACTIVE = "tour_active"  # session_state: (tour name or id, Tour) of the tour on, or None
AT = "tour_at"  # session_state: (tour name or id, scene number) shown last
WANT = "tour_want"  # session_state: the scene Previous / Next asked for
NOTICE = "tour_notice"  # session_state: what the link asked for that could not be shown (said once)
LEFT = "tour_left"  # session_state: the tour just left (its name may linger in the URL for a run)
DRAFT = "tour_draft"  # session_state: the scenes a lecturer has recorded so far
URL_KEYS = ("tour", "scene")  # kept in every page's URL while a tour is on
NOT_SHARED = ("present", "follow", *URL_KEYS)  # what a scene or a shared view never carries


def shipped_names() -> list[str]:
    return sorted(p.stem for p in SHIPPED.glob("*.json"))


def load_tour(name: str, pages: set[str]) -> Tour:
    """A starter tour by file name, or a recorded one by id; TourError says why not."""
    if name in shipped_names():
        return parse_tour((SHIPPED / f"{name}.json").read_bytes(), pages)
    if is_tour_id(name):
        return load_saved_tour(name, pages)
    raise TourError(f"no tour named {name[:40]!r}; starter tours: {', '.join(shipped_names())}")


def _scene_number(raw: str | None, n: int) -> tuple[int, str | None]:
    """The scene asked for (1..n) and, where the link's value cannot be used, why."""
    if raw is None:
        return 1, None
    try:
        k = int(raw)
    except ValueError:
        return 1, f"{md_code(f'scene={raw[:20]}')} is not a number: showing scene 1"
    if not 1 <= k <= n:
        return 1, f"`scene={k}`: this tour has scenes 1 to {n}: showing scene 1"
    return k, None


def follow_link(pages: dict[str, Any], current: str) -> None:
    """The router's part: a `tour` in the link (or Previous / Next) opens that scene's page
    and view; an unknown tour, a damaged file or a bad scene number gets a notice."""
    name = st.query_params.get("tour")
    if name is None:
        st.session_state[ACTIVE] = None
        st.session_state.pop(LEFT, None)
        return
    if name == st.session_state.get(LEFT):  # just left: its name may linger in the URL for a run
        st.session_state[ACTIVE] = None
        for key in URL_KEYS:
            st.query_params.pop(key, None)
        return
    active = st.session_state.get(ACTIVE)
    if active is None or active[0] != name:
        try:
            active = (name, load_tour(name, set(pages)))
        except TourError as e:
            st.error(f"This tour cannot be opened: {md_text(str(e))}.", icon=":material/tour:")
            st.session_state[ACTIVE] = None
            return
        st.session_state[ACTIVE] = active
    tour = active[1]
    k, problem = _scene_number(st.query_params.get("scene"), len(tour.scenes))
    from_link = WANT not in st.session_state and (st.session_state.get(AT) or (None,))[0] != name
    k = st.session_state.pop(WANT, k)
    if st.session_state.get(AT) == (name, k) and not problem:
        return
    st.session_state[AT] = (name, k)
    scene = tour.scenes[k - 1]
    if notice := " ".join(filter(None, [problem, _overridden(scene, k) if from_link else ""])):
        st.session_state[NOTICE] = notice  # said above the scene, after the page switch
    shown = {key: st.query_params.get(key) for key in scene.params}
    if scene.page == current and shown == scene.params and str(k) == st.query_params.get("scene"):
        return  # already on it (a follower who followed the lecturer's view here)
    st.session_state[REOPEN] = True  # the same page too: its widgets take the scene's values
    present = {"present": "1"} if st.session_state.get("present") else {}
    st.switch_page(pages[scene.page], query_params={**scene.params, "tour": name, "scene": str(k), **present})


def _overridden(scene: Scene, k: int) -> str:
    """What a tour link also asked for that the scene's own view replaces, said by name."""
    ignored = [
        md_code(f"{key}={shown(value)}")
        for key, value in st.query_params.items()
        if key not in (*NOT_SHARED, *URL_KEYS) and scene.params.get(key) != value
    ]
    if not ignored:
        return ""
    verb = "was" if len(ignored) == 1 else "were"
    return f"The tour's scene {k} sets its own view, so the link's {', '.join(ignored)} {verb} not used."


def link_params() -> dict[str, str]:
    """The tour's parameters for a page's URL while a tour is on (attention_lab.frame.state.write_state)."""
    at = st.session_state.get(AT)
    if not st.session_state.get(ACTIVE) or not at:
        return {}
    return {"tour": at[0], "scene": str(at[1])}


def position() -> dict[str, Any] | None:
    """The tour on, for its download: {"title", "n" scenes, "k" the scene shown}; None if none."""
    active, at = st.session_state.get(ACTIVE), st.session_state.get(AT)
    if not active or not at:
        return None
    return {"title": active[1].title, "n": len(active[1].scenes), "k": at[1]}


def _go(k: int) -> None:
    st.session_state[WANT] = k


def _leave() -> None:
    st.session_state[LEFT] = st.query_params.get("tour")
    st.session_state[ACTIVE] = st.session_state[AT] = None


def tour_bar() -> None:
    """Above the page while a tour is on: scene k of n, its note, Previous / Next (the arrow
    keys too, while no field or chart has the focus) and Leave the tour. One slim line that
    stays under the header while the page scrolls, so a scene's key chart can be brought into
    view below it (`reveal_script`)."""
    if notice := st.session_state.pop(NOTICE, None):
        st.info(notice, icon=":material/tour:")
    active, at = st.session_state.get(ACTIVE), st.session_state.get(AT)
    if not active or not at:
        return
    tour, k = active[1], at[1]
    n = len(tour.scenes)
    st.html(BAR_CSS % (HEADER_REM["present"] if present.on() else HEADER_REM["plain"]))
    bar = st.container(  # clear of the header (attention_lab.frame.present)
        border=True,
        key=present.TOP_BAR_KEYS[0],
        horizontal=True,
        wrap=False,
        vertical_alignment="center",
        gap="small",
    )
    with bar:
        title = f"{tour.title} · " if tour.title else ""
        note = tour.scenes[k - 1].note
        # a live region: a screen reader reads each new scene's note as the scene opens
        st.html(
            '<div role="status" aria-live="polite" tabindex="0">'  # focusable: a tap or Tab shows all of it
            + f"<strong>{html.escape(title)}scene {k} of {n}</strong>"
            + (f": {html.escape(note)}" if note else "")
            + "</div>"
            + reveal_script(key_charts(active[0], k), f"{active[0]}:{k}"),
            width="stretch",
            unsafe_allow_javascript=True,
        )
        step = {"on_click": _go}
        st.button("Previous", args=(k - 1,), disabled=k == 1, shortcut="Left", key="tour_prev", **step)
        st.button("Next", args=(k + 1,), disabled=k == n, shortcut="Right", key="tour_next", **step)
        st.button("Leave the tour", on_click=_leave, key="tour_leave")


HEADER_REM = {"plain": 3.75, "present": 2.2}  # Streamlit's header, and projector mode's (frame.present)
# the bar: one line of small type and small buttons, kept under the header while the page scrolls;
# the note takes two lines at most (all of it on hover or focus, and for a screen reader)
BAR_CSS = fill(
    """<style>
$layout_wrapper:has(> $bar) { position: sticky; top: %.2frem; z-index: 99;
  margin-top: 1.25rem; background: var(--st-background-color, Canvas); }
$bar { margin-top: 0 !important; padding: 0.3rem 0.6rem !important; }
/* the header hides the page scrolled by above the bar (projector mode makes it transparent) */
$header { background: var(--st-background-color, Canvas) !important; }
$bar [role="status"] { font-size: 0.85rem; line-height: 1.3; display: -webkit-box;
  -webkit-line-clamp: 2; -webkit-box-orient: vertical; overflow: hidden; }
$bar [role="status"]:hover, $bar [role="status"]:focus { -webkit-line-clamp: unset; }  /* a tap too */
$bar button { min-height: 0; padding: 0.1rem 0.6rem; }
$bar button p { font-size: 0.85rem; }
@media (max-width: 640px) { $bar { flex-wrap: wrap; } }  /* a phone: the buttons under the note */
</style>""",
    bar="tour_bar",
)


def key_charts(name: str, k: int) -> tuple[str, ...]:
    """The widget keys of scene k's key charts (or tables), from a starter tour's `show`: the
    charts the scene is about, brought into view when it opens. () for recorded tours."""
    return _shipped_shows(name).get(k, ())


@functools.cache
def _shipped_shows(name: str) -> dict[int, tuple[str, ...]]:
    """Scene number -> its `show` keys, read once per process (serving.tours keeps only what a
    recorded tour has too: page, params, note)."""
    if name not in shipped_names():
        return {}
    scenes = json.loads((SHIPPED / f"{name}.json").read_text(encoding="utf-8")).get("scenes", [])
    return {
        k: tuple(str(key) for key in scene.get("show", []))
        for k, scene in enumerate(scenes, start=1)
        if isinstance(scene, dict) and isinstance(scene.get("show", []), list)
    }


#: brings a scene's key charts into view when the scene opens (__KEYS__: their widget keys)
REVEAL_JS = inline(
    (Path(__file__).resolve().parents[1] / "static" / "lecture" / "reveal.js").read_text(encoding="utf-8")
)


def reveal_script(keys: tuple[str, ...], scene: str) -> str:
    """The script that brings `keys` into view when scene `scene` opens ('' when none)."""
    if not keys:
        return ""
    # the scene in a comment: the element differs from the last scene's, so the script runs again
    return (
        f"<script>{REVEAL_JS.replace('__KEYS__', json.dumps(list(keys)))}/* {html.escape(scene)} */</script>"
    )


# ---------------------------------------------------------------- recording a tour


def _add_view(page: str) -> None:
    params = {k: v for k, v in st.query_params.to_dict().items() if k not in NOT_SHARED}
    note = str(st.session_state.get("tour_note", "")).strip()[:600]
    st.session_state.setdefault(DRAFT, []).append(Scene(page, params, note))
    st.session_state["tour_note"] = ""


def _save() -> None:
    title = str(st.session_state.get("tour_title", "")).strip()[:120]
    st.session_state["tour_saved"] = save_tour(Tour(title, tuple(st.session_state.get(DRAFT, []))))


def recorder(page: str) -> None:
    """The sidebar's tour recorder: add the view shown, with a note, as the next scene;
    save the tour (a link) or download it as JSON."""
    with st.sidebar.expander("Record a tour"):
        st.text_input("Note for this view", key="tour_note", max_chars=600)
        st.button("Add this view to the tour", icon=":material/add:", on_click=_add_view, args=(page,))
        draft: list[Scene] = st.session_state.get(DRAFT, [])
        if not draft:
            st.caption("Each view you add becomes the next scene.")
            return
        st.caption(
            f"{len(draft)} scene{'s' if len(draft) > 1 else ''}: "
            + ", ".join(s.page or "home" for s in draft)
        )
        st.text_input("Tour title", key="tour_title", max_chars=120)
        st.button("Save the tour", icon=":material/save:", on_click=_save)
        tour = Tour(str(st.session_state.get("tour_title", "")), tuple(draft))
        st.download_button("Download as JSON", tour.to_json(), file_name="tour.json", mime="application/json")
        if saved := st.session_state.get("tour_saved"):
            st.code(f"?tour={saved}&scene=1", language=None, wrap_lines=True)
