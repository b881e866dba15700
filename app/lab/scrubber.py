"""The /train snapshot scrubber: the probe input's attention at each saved step, which head
it opens on, whether it plays (follows the latest snapshot) or holds one, and the film of
one head over training as a GIF for slides."""

from __future__ import annotations

import bisect
import functools
from typing import Any

import numpy as np
import streamlit as st

from lab import charts
from lab.gif import animated_gif
from lab.head_view import open_on_lesson
from serving import RunInfo, RunProgress
from transformer_core import CheckpointError
from transformer_core.interp.heads import (
    anti_diagonal_scores,
    induction_template,
    previous_token_template,
    template_score,
)

# ---------------------------------------------------------------- the snapshot scrubber
# Playing: the scrubber follows the latest snapshot as the run saves new ones. Paused (the
# Pause button, or the user moving the scrubber): it holds its step across the live
# panel's refreshes until "Follow latest" plays again. Kept per session, reset per run.
#
# The server never sets the scrubber's value (a value set through st.session_state while
# the panel refreshes can come back from the browser as a stale "change" and pause it):
# each position it must show is a fresh widget whose default is that position. Playing,
# the key names the number of snapshots, so each new snapshot is a new widget at the
# latest; paused, the key is fixed (a select_slider keeps its identity and the user's
# choice while its options grow); every switch between the two gets a new generation.
SCRUB_STATE = "snap_scrub"  # {"run": id, "follow": bool, "held": step, "shown": step, "gen": int, "key": str}


def _scrub() -> dict[str, Any]:
    return st.session_state.setdefault(
        SCRUB_STATE, {"run": None, "follow": True, "held": 0, "shown": 0, "gen": 0}
    )


def scrub_position(run_id: str, steps: list[int]) -> tuple[int, str]:
    """(index into `steps`, the snapshots' steps in order, of the snapshot to show now; the
    scrubber's widget key): the latest while playing, else the held one (the last one at
    or before its step)."""
    state = _scrub()
    if state["run"] != run_id:
        state.update(run=run_id, follow=True, held=0, shown=0, gen=state["gen"] + 1)
    if state["follow"]:
        index, key = len(steps) - 1, f"snap_step-{state['gen']}-{len(steps)}"
    else:
        index, key = max(0, bisect.bisect_right(steps, state["held"]) - 1), f"snap_step-{state['gen']}"
    state.update(shown=steps[index], key=key)
    return index, key


def scrub_following() -> bool:
    return bool(_scrub()["follow"])


def hold_scrubber(key: str) -> None:
    """The scrubber's on_change: the user picked a snapshot, so the scrubber holds it.
    Only the scrubber drawn last counts: the browser reports a replaced one (a previous
    snapshot count's) as changed when it is dropped, which is no choice of the user's."""
    state = _scrub()
    if key != state.get("key"):
        return
    if state["follow"]:
        state.update(follow=False, gen=state["gen"] + 1)
    state["held"] = int(st.session_state[key])


def toggle_follow() -> None:
    """The play/pause button: pause holds the snapshot shown now; play follows the latest."""
    state = _scrub()
    state.update(follow=not state["follow"], held=state["shown"], gen=state["gen"] + 1)


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
    trains it plays (follows the latest snapshot) until paused or moved; a held position
    stays across the live panel's refreshes."""
    if not p.snapshots:
        return
    last = len(p.snapshots) - 1
    steps = [int(m["step"]) for m in p.snapshots]
    index, key = scrub_position(info.id, steps)
    playable = info.active and last > 0
    if playable:
        c0, c1, c2, c3, c4 = st.columns([2, 3, 2, 1, 1], vertical_alignment="bottom")
        following = scrub_following()
        c0.button(
            "Pause" if following else "Follow latest",
            icon=":material/pause:" if following else ":material/play_arrow:",
            key="snap_play",
            on_click=toggle_follow,
            help="Hold the scrubber at this snapshot while the run goes on"
            if following
            else "Play: follow the latest snapshot as the run saves new ones",
            width="stretch",
        )
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
    probe = "".join(t for t in snap["source_tokens"] if not t.startswith("<"))
    where = f"snapshot {index + 1} of {last + 1}, step {snap['step']:,}"
    if playable and not scrub_following():
        where = f"paused at {where} (latest: step {p.snapshots[-1]['step']:,})"
    elif playable:
        where = f"following the latest: {where}"
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
    charts.show(charts.head_spec(weights, queries, keys, title, height=380, file=stem), key="snap_fig")
    film = functools.partial(scrubber_gif, p, kind, int(layer), int(head))  # made on the click
    st.download_button("Save as GIF", film, file_name=f"train_{kind}_L{int(layer)}H{int(head)}.gif",
                       mime="image/gif", icon=":material/animated_images:", key="snap_gif")  # fmt: skip
