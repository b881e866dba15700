"""The /train page's plumbing: the server-wide run cap, this session's run, downloads."""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import streamlit as st
import torch

from lab.resources import MY_MODELS_KEY
from transformer_core.io.checkpoint import CHECKPOINTS_DIR, Checkpoint, save_checkpoint
from transformer_core.train.runs import BackgroundRun, RunSlots
from transformer_core.train.tasks import ReversalTask

RUN_KEY, OWNER_KEY = "train_run", "train_run_owner"
REPORT_LENGTHS = [3, 5, 7, 10, 12, 15]
LENGTH_TABLE = CHECKPOINTS_DIR / "length_generalization.json"


FORM_KEYS = ("train_task", "train_positions", "train_preset")


def keep_form_state() -> None:
    """Keep the /train choices while the user is on other pages (Streamlit drops the
    state of widgets a run does not draw unless the key is assigned to itself)."""
    for key in FORM_KEYS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def remembered(name: str, default: Any) -> Any:
    """The last value of a keyless /train widget in this session, else default."""
    return st.session_state.get(f"_kept_{name}", default)


def remember(name: str, value: Any) -> Any:
    """Store a keyless widget's value (fed back through `remembered`, it survives visits to
    other pages, which drop the state of widgets they do not draw)."""
    st.session_state[f"_kept_{name}"] = value
    return value


@st.cache_resource
def run_slots() -> RunSlots:
    """One per server: ATTENTION_LAB_MAX_RUNS runs at once (default 2 on CPU, 4 on CUDA)."""
    default = 4 if torch.cuda.is_available() else 2
    return RunSlots(int(os.environ.get("ATTENTION_LAB_MAX_RUNS", default)))


class _Owner:
    """A token kept only in session_state: when the session goes, the run stops."""


def current_run() -> BackgroundRun | None:
    return st.session_state.get(RUN_KEY)


def start_run(run: BackgroundRun) -> None:
    """Start `run` as this session's run, stopping any earlier one (one run per session)."""
    old = current_run()
    if old is not None and not old.finished:
        old.stop()
    st.session_state[OWNER_KEY] = owner = _Owner()
    st.session_state[RUN_KEY] = run.start(owner=owner)


def as_checkpoint(run: BackgroundRun, positions: str) -> Checkpoint:
    """Wrap a finished run's model like a loaded checkpoint (for the explorers)."""
    task = run.task
    meta = {
        "task": task.name,
        "metrics": run.metrics,
        "train_args": {**run.config.to_dict(), "positions": positions},
        "config": run.model.config.to_dict(),
    }
    return Checkpoint(name=run.label, model=run.model.eval(), tokenizer=task.tokenizer, meta=meta)


def publish(run: BackgroundRun, positions: str) -> str:
    """Make the run's model selectable in this session's explorers; returns its label."""
    models = st.session_state.setdefault(MY_MODELS_KEY, {})
    if run.label not in models and run.model is not None:
        models[run.label] = as_checkpoint(run, positions)
    return run.label


def checkpoint_zip(ckpt: Checkpoint) -> bytes:
    """The checkpoint folder (model.safetensors + checkpoint.json) as a zip archive."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_checkpoint(
            Path(tmp) / ckpt.name,
            ckpt.model,
            ckpt.tokenizer,
            train_args=ckpt.meta.get("train_args"),
            metrics=ckpt.meta.get("metrics"),
            command="trained in the Attention Lab /train page",
        )
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
            for path in sorted(folder.iterdir()):
                zf.write(path, f"{ckpt.name}/{path.name}")
        return buf.getvalue()


@st.cache_data
def length_table() -> dict:
    """The precomputed length-generalisation results shipped with the checkpoints."""
    if not LENGTH_TABLE.is_file():
        return {}
    return json.loads(LENGTH_TABLE.read_text())


def reversal_eval_lengths(task: object) -> None:
    """Evaluate reversal runs at the training lengths and beyond (12, 15)."""
    if isinstance(task, ReversalTask):
        task.eval_lengths = REPORT_LENGTHS
