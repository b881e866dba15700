"""The /train snapshot scrubber: the probe input's attention at each saved step, which head
it opens on, whether it plays (follows the latest snapshot) or holds one, and the film of
one head over training as a GIF for slides."""

from __future__ import annotations

import bisect
import functools
import time
from typing import Any

import numpy as np
import streamlit as st

from attention_lab.charts import component
from attention_lab.charts import specs as charts
from attention_lab.charts.gif import animated_gif
from attention_lab.explorers.head_view import open_on_lesson
from attention_lab.serving import RunInfo, RunProgress
from transformer_core import CheckpointError
from transformer_core.interp.heads import (
    anti_diagonal_scores,
    induction_template,
    previous_token_template,
    template_score,
)

# ---------------------------------------------------------------- the snapshot scrubber
# A running run: the scrubber follows the latest snapshot as the run saves new ones. Paused
# (the Pause button, or the user moving the scrubber) it holds its step across the live
# panel's refreshes until "Follow latest" follows again. A finished run: Play steps through
# the snapshots from the first (or from the one shown), one every PLAY_SECONDS, in a
# fragment that ticks only while it plays. Kept per session, reset per run.
#
# The server never sets the scrubber's value (a value set through st.session_state while
# the panel refreshes can come back from the browser as a stale "change" and pause it):
# each position it must show is a fresh widget whose default is that position. Following
# or playing, the key names the position, so each new one is a new widget; paused, the key
# is fixed (a select_slider keeps its identity and the user's choice while its options
# grow); every switch between the two gets a new generation.
SCRUB_STATE = "snap_scrub"  # {"run", "follow", "playing", "held", "shown", "gen", "key", "next", "ticking"}
PLAY_SECONDS = 0.6  # one snapshot on screen while playing


def _scrub() -> dict[str, Any]:
    return st.session_state.setdefault(
        SCRUB_STATE, {"run": None, "follow": True, "playing": False, "held": 0, "shown": 0, "gen": 0}
    )


def scrub_position(run_id: str, steps: list[int]) -> tuple[int, str]:
    """(index into `steps`, the snapshots' steps in order, of the snapshot to show now; the
    scrubber's widget key): the latest while following, the next one when playing is due,
    else the held one (the last one at or before its step)."""
    state = _scrub()
    if state["run"] != run_id:
        state.update(run=run_id, follow=True, playing=False, held=0, shown=0, gen=state["gen"] + 1)
    held = max(0, bisect.bisect_right(steps, state["held"]) - 1)
    if state["playing"]:
        index = held
        if time.monotonic() >= state["next"]:
            index = min(held + 1, len(steps) - 1)
            state.update(held=steps[index], next=time.monotonic() + PLAY_SECONDS)
        if index == len(steps) - 1:  # the film has ended on the last snapshot
            state.update(playing=False, gen=state["gen"] + 1)
        key = f"snap_step-{state['gen']}-{index}-play"
    elif state["follow"]:
        index, key = len(steps) - 1, f"snap_step-{state['gen']}-{len(steps)}"
    else:
        index, key = held, f"snap_step-{state['gen']}"
    state.update(shown=steps[index], key=key)
    return index, key


def scrub_following() -> bool:
    return bool(_scrub()["follow"])


def scrub_playing() -> bool:
    return bool(_scrub()["playing"])


def hold_scrubber(key: str) -> None:
    """The scrubber's on_change: the user picked a snapshot, so the scrubber holds it.
    Only the scrubber drawn last counts: the browser reports a replaced one (a previous
    snapshot count's) as changed when it is dropped, which is no choice of the user's."""
    state = _scrub()
    if key != state.get("key"):
        return
    if state["follow"] or state["playing"]:
        state.update(follow=False, playing=False, gen=state["gen"] + 1)
    state["held"] = int(st.session_state[key])


def toggle_follow() -> None:
    """A running run's Pause / Follow latest: pause holds the snapshot shown now; follow
    shows the latest."""
    state = _scrub()
    state.update(follow=not state["follow"], held=state["shown"], gen=state["gen"] + 1)


def toggle_play(first_step: int, last_step: int) -> None:
    """A finished run's Play / Pause: play from the snapshot shown (from the first when the
    last is shown); pause holds the one shown."""
    state = _scrub()
    playing = not state["playing"]
    start = first_step if state["shown"] >= last_step else state["shown"]
    state.update(
        playing=playing, follow=False, held=start if playing else state["shown"], gen=state["gen"] + 1
    )
    state["next"] = time.monotonic() + PLAY_SECONDS


def telling_head(snap: dict[str, Any], kind: str, task: str) -> tuple[int, int]:
    """The head a snapshot of the probe input opens on, (layer, head): the most anti-diagonal
    cross-attention head, the strongest induction head of an induction run, else the
    strongest previous-token head."""
    weights = snap[kind]  # (L, H, Tq, Tk)
    if kind == "cross":
        scores = anti_diagonal_scores(weights, sum(not t.startswith("<") for t in snap["source_tokens"]))
    elif task == "induction":
        ids = {t: i for i, t in enumerate(dict.fromkeys(snap["source_tokens"]))}
        scores = template_score(weights, induction_template([ids[t] for t in snap["source_tokens"]]))
    else:
        scores = template_score(weights, previous_token_template(weights.shape[-2]))
    layer, head = np.unravel_index(int(np.argmax(np.nan_to_num(scores, nan=-1.0))), scores.shape)
    return int(layer), int(head)


def scrubber_gif(p: RunProgress, kind: str, layer: int, head: int) -> bytes:
    """One head's attention of the probe input at every snapshot, as a looping GIF for slides."""
    maps, captions = [], []
    for i, meta in enumerate(p.snapshots):
        try:
            snap = p.load_snapshot(i)
        except CheckpointError:
            continue  # an unreadable snapshot: the others still make the film
        maps.append(snap[kind][layer, head])
        captions.append(f"step {int(meta['step']):,} · {kind} layer {layer} head {head}")
    return animated_gif(maps, captions)


def show_snapshots(info: RunInfo, p: RunProgress) -> None:
    """The snapshot scrubber: attention of the probe input at each saved step. While the run
    trains it follows the latest snapshot until paused or moved (inside the live panel);
    a finished run's scrubber is a fragment of its own that ticks while it plays."""
    if info.active:
        snapshot_panel(info, p)
        return
    state = _scrub()
    state["ticking"] = playing = state["run"] == info.id and scrub_playing()
    st.fragment(run_every=PLAY_SECONDS if playing else None)(snapshot_panel)(info, p)


def _play_button(where: Any, info: RunInfo, steps: list[int]) -> None:
    """A running run's Pause / Follow latest, a finished run's Pause / Play."""
    if info.active:
        moving, idle_label = scrub_following(), "Follow latest"
        click, args = toggle_follow, ()
        help = ("Hold the scrubber at this snapshot while the run goes on",
                "Follow the latest snapshot as the run saves new ones")  # fmt: skip
    else:
        moving, idle_label = scrub_playing(), "Play"
        click, args = toggle_play, (steps[0], steps[-1])
        help = ("Hold this snapshot", "Play the snapshots one after another, as a film")
    where.button(
        "Pause" if moving else idle_label,
        icon=":material/pause:" if moving else ":material/play_arrow:",
        key="snap_play", on_click=click, args=args, help=help[0] if moving else help[1], width="stretch",
    )  # fmt: skip


def snapshot_panel(info: RunInfo, p: RunProgress) -> None:
    """The scrubber with its play button, the attention kind and head, the map and the GIF."""
    if not p.snapshots:
        return
    if not info.active and _scrub().get("ticking") != scrub_playing():
        st.rerun(scope="app")  # start or stop the fragment's ticking
    last = len(p.snapshots) - 1
    steps = [int(m["step"]) for m in p.snapshots]
    index, key = scrub_position(info.id, steps)
    if last:
        c0, c1, c2, c3, c4 = st.columns([2, 3, 2, 1, 1], vertical_alignment="bottom")
        _play_button(c0, info, steps)
    else:
        c1, c2, c3, c4 = st.columns([3, 2, 1, 1], vertical_alignment="bottom")
    if last:
        c1.select_slider(
            "Snapshot at step", steps, value=steps[index], key=key, format_func="{:,}".format,
            on_change=hold_scrubber, args=(key,),
        )  # fmt: skip
    try:
        snap = p.load_snapshot(index)
    except CheckpointError as e:
        st.warning(str(e))
        return
    kinds = [k for k in ("cross", "encoder_self", "decoder_self", "self") if k in snap]
    if not kinds:  # a GRU without attention: nothing to scrub through
        st.caption(f"This model has no attention: its output on the probe at step {snap['step']:,} is "
                   f"“{snap.get('output', '')}”.")  # fmt: skip
        return
    probe = "".join(t for t in snap["source_tokens"] if not t.startswith("<"))
    where = f"snapshot {index + 1} of {last + 1}, step {snap['step']:,}"
    if info.active and last and not scrub_following():
        where = f"paused at {where} (latest: step {p.snapshots[-1]['step']:,})"
    elif info.active and last:
        where = f"following the latest: {where}"
    elif scrub_playing():
        where = f"playing: {where}"
    st.caption(f"Attention of the probe input “{probe}” during training · {where}")
    kind = c2.selectbox("Attention", kinds, key="snap_kind", persist_state="session")
    L, H = snap[kind].shape[:2]
    # on the best-scoring head of this snapshot, until the reader picks another
    open_on_lesson(
        "snap_",
        (info.id, kind, index),
        telling_head(snap, kind, info.task),
        "snap_layer" not in st.session_state,
    )
    layer = c3.number_input("Layer", 0, L - 1, key="snap_layer", persist_state="session")
    head = c4.number_input("Head", 0, H - 1, key="snap_head", persist_state="session")
    queries = snap["target_tokens"] if kind in ("cross", "decoder_self") else snap["source_tokens"]
    keys = snap["target_tokens"] if kind == "decoder_self" else snap["source_tokens"]
    title = f"step {snap['step']}: {kind} layer {layer} head {head}"
    if "output" in snap:
        title += f" — output “{snap['output']}”"
    weights = snap[kind][int(layer), int(head)]
    stem = f"train_step{snap['step']}_{kind}_L{int(layer)}H{int(head)}"
    component.show(charts.head_spec(weights, queries, keys, title, height=380, file=stem), key="snap_fig")
    film = functools.partial(scrubber_gif, p, kind, int(layer), int(head))  # made on the click
    st.download_button("Save as GIF", film, file_name=f"train_{kind}_L{int(layer)}H{int(head)}.gif",
                       mime="image/gif", icon=":material/animated_images:", key="snap_gif")  # fmt: skip
