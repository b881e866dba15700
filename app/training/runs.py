"""The /train page's plumbing: the box-wide run queue, this session's runs, their progress,
downloads and the shipped length table. Training itself happens in run processes or
workers of the serving layer (`serving`); this module only submits, stops and reads.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import zipfile

import streamlit as st

from attention_lab.accounts.sign_in import person_id
from attention_lab.frame.markdown_safe import md_text
from attention_lab.models.resources import MY_MODELS_KEY, remember_run, run_queue
from attention_lab.serving import RunInfo, RunProgress, RunRequest
from transformer_core.io import CHECKPOINTS_DIR, META_FILE, WEIGHTS_FILE
from transformer_core.train import REPORT_LENGTHS

__all__ = ["REPORT_LENGTHS"]
#: session_state: the run shown (URL parameter `run`: frame.state's prefix + name); {run id: RunProgress}
CURRENT_PREFIX = "train_"
CURRENT_KEY, PROGRESS_KEY = CURRENT_PREFIX + "run", "train_progress"
LENGTH_TABLE = CHECKPOINTS_DIR / "length_generalization.json"


def submit(request: RunRequest, corpus: str | None = None) -> str:
    """Queue a run for this person (held to their limits) and make it the one the page
    shows; returns its id."""
    request = dataclasses.replace(request, owner=person_id())
    run_id = run_queue().submit(request, corpus)
    remember_run(run_id, request.label, request.train_config().task)
    st.session_state[CURRENT_KEY] = run_id
    return run_id


def my_runs(latest: int = 20) -> list[RunInfo]:
    """The runs this person started (signed in: on any device; else in this browser), newest first."""
    return run_queue().runs_of(person_id(), latest)


def my_run_label(info: RunInfo) -> str:
    """A line of "my runs": label, status and when it was started (markdown-safe)."""
    when = datetime.datetime.fromtimestamp(info.created).strftime("%d %b %H:%M")
    return f"{md_text(info.label)} · {info.status} · {when}"


def current_run_id() -> str | None:
    return st.session_state.get(CURRENT_KEY)


def open_run(run_id: str) -> RunInfo | None:
    """Make a run (from a link) the page's current run; None when the id is unknown here."""
    info = run_queue().info(run_id)
    if info is not None:
        st.session_state[CURRENT_KEY] = run_id
        if info.status != "evicted":
            remember_run(run_id, info.label, info.task)
    return info


def progress(run_id: str) -> RunProgress:
    """The session's incremental reader of a run's progress (only new lines are parsed).
    A session keeps the reader of the run it shows only: opening another run frees the
    previous one's lists (a long run's steps, losses and rates are megabytes per session)."""
    readers: dict[str, RunProgress] = st.session_state.setdefault(PROGRESS_KEY, {})
    if run_id not in readers:
        readers.clear()
        readers[run_id] = RunProgress(run_queue().folder(run_id))
    return readers[run_id]


def read_progress(run_id: str) -> RunProgress:
    """A run's whole progress, read now (for the overlay of several runs: not kept in the session)."""
    p = RunProgress(run_queue().folder(run_id))
    while p.refresh():
        pass
    return p


def evicted_runs() -> list[RunInfo]:
    """This session's runs that were deleted to keep the runs folder within its budget."""
    infos = [run_queue().info(r) for r in st.session_state.get(MY_MODELS_KEY, {})]
    return [i for i in infos if i is not None and i.status == "evicted"]


def checkpoint_zip(run_id: str) -> bytes:
    """The run's checkpoint (model.safetensors + checkpoint.json) as a zip archive."""
    folder = run_queue().folder(run_id)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in (WEIGHTS_FILE, META_FILE):
            zf.write(folder / name, f"{run_id}/{name}")
    return buf.getvalue()


@st.cache_data
def length_table() -> dict:
    """The precomputed length-generalisation results shipped with the checkpoints."""
    if not LENGTH_TABLE.is_file():
        return {}
    return json.loads(LENGTH_TABLE.read_text())


def trained_span(results: dict) -> tuple[int, int] | None:
    """The input lengths the table's models were trained on, as the benchmark that made it
    recorded them (`train_lengths`); None where it did not."""
    try:
        shortest, longest = (int(n) for n in results["train_lengths"])
    except (KeyError, TypeError, ValueError):
        return None
    return (shortest, longest) if shortest <= longest else None


def length_column(n: int, span: tuple[int, int] | None) -> str:
    """A length's column in the table, marked trained or never seen in training where known."""
    if span is None:
        return f"len {n}"
    return f"len {n} (trained)" if span[0] <= n <= span[1] else f"len {n} (never seen)"


def span_caption(results: dict, span: tuple[int, int] | None) -> str:
    """What the table's lengths were in training, in a sentence (from the file, not assumed)."""
    if span is None:
        return "The lengths the models were trained on are not recorded with these results."
    unseen = [str(n) for n in results.get("lengths", REPORT_LENGTHS) if not span[0] <= int(n) <= span[1]]
    never = f" Lengths {', '.join(unseen)} were never seen (columns marked so)." if unseen else ""
    return f"Every reversal model here was trained on strings of {span[0]} to {span[1]} letters.{never}"
