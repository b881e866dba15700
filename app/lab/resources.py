"""Models and devices for the pages.

Shipped models are loaded once per (checkpoint, device) with st.cache_resource and are
never mutated (inference options are per call). Models a user trains live only in that
user's st.session_state.
"""

from __future__ import annotations

import os

import streamlit as st
import torch

from transformer_core.device import describe_device, resolve_device
from transformer_core.errors import CheckpointError
from transformer_core.io.checkpoint import (
    Checkpoint,
    list_checkpoints,
    load_checkpoint,
    read_meta,
    shipped_checkpoint_path,
)

MY_MODELS_KEY = "my_models"  # session_state: {label: Checkpoint}


def configure_torch() -> None:
    """CPU threads per torch op: ATTENTION_LAB_TORCH_THREADS, default half the cores.

    Many users' reruns and trainings share the CPU; one op grabbing every core makes the
    others wait on busy-spinning threads (seen: a 0.1 s sample taking 4-9 s)."""
    default = max(1, (os.cpu_count() or 2) // 2)
    threads = int(os.environ.get("ATTENTION_LAB_TORCH_THREADS", default))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def current_device() -> torch.device:
    """The user's choice in the sidebar, else ATTENTION_LAB_DEVICE, else auto."""
    choice = st.session_state.get("device_choice") or os.environ.get("ATTENTION_LAB_DEVICE", "auto")
    try:
        return resolve_device(choice)
    except ValueError:
        return resolve_device("auto")


def device_picker() -> None:
    """Sidebar selector for the device (auto / cpu / cuda when present)."""
    options = ["auto", "cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    with st.sidebar:
        st.selectbox("Device", options, key="device_choice", help="auto = CUDA when available, else CPU")
        st.caption(describe_device(current_device()))


@st.cache_resource(max_entries=24, show_spinner="Loading model…")
def _load_shipped(name: str, device: str) -> Checkpoint:
    return load_checkpoint(shipped_checkpoint_path(name), torch.device(device))


def load_model(name: str) -> Checkpoint:
    """A shipped checkpoint (cached, shared by all users) or one of this user's models."""
    mine = st.session_state.get(MY_MODELS_KEY, {})
    if name in mine:
        return mine[name]
    return _load_shipped(name, str(current_device()))


@st.cache_data(ttl=600)
def shipped_checkpoints() -> dict[str, dict]:
    """name -> metadata (config, metrics, command) of every shipped checkpoint."""
    out = {}
    for name in list_checkpoints():
        try:
            out[name] = read_meta(shipped_checkpoint_path(name))
        except CheckpointError:
            continue
    return out


def model_choices(task: str) -> list[str]:
    """Shipped checkpoint names for 'reverse' or 'lm', then this user's trained models."""
    shipped = [n for n, m in shipped_checkpoints().items() if m.get("task") == task]
    mine = [n for n, c in st.session_state.get(MY_MODELS_KEY, {}).items() if c.task == task]
    return shipped + mine
