"""Models and devices for the pages.

Models are loaded once per (checkpoint, device) with st.cache_resource and are never
mutated (inference options are per call): shipped names, and run ids (`run-` + hex) of
models trained on /train, which live on disk in the runs folder. A run id is a capability:
whoever has it may open the model, so caching by id shares nothing that was private. The
session keeps only the ids of its own runs (MY_MODELS_KEY), to offer them as choices.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import streamlit as st
import torch

from attention_lab.frame import state
from attention_lab.serving import RunStore, backends, is_run_id, open_run_store, settings
from transformer_core import CheckpointError, ConfigError, describe_device, resolve_device, set_cpu_threads
from transformer_core.io import (
    META_FILE,
    Checkpoint,
    list_checkpoints,
    load_checkpoint,
    read_meta,
    resolve_checkpoint,
    shipped_checkpoint_path,
)
from transformer_core.train import TASKS

MY_MODELS_KEY = "my_models"  # session_state: {run id: {"label": str, "task": a /train task}}
URL_CHECKPOINT_PARAMS = ("checkpoint", "a", "b")  # query parameters that may name a run id


def configure_torch() -> None:
    """CPU threads per torch or BLAS op: ATTENTION_LAB_TORCH_THREADS, default half the cores.

    Many users' reruns and trainings share the CPU; one op grabbing every core makes the
    others wait on busy-spinning threads (seen: a 0.1 s sample taking 4-9 s). Every other
    ATTENTION_LAB_* setting is checked here too: a bad value is named on the page (the admin
    sees which variable to fix), never a traceback."""
    try:
        settings.check_all()
        threads = settings.torch_threads()
    except ConfigError as e:
        st.error(f"This server's settings need fixing: {e}", icon=":material/settings_alert:")
        state.stop()
    set_cpu_threads(threads)


def current_device() -> torch.device:
    """The user's choice in the sidebar, else ATTENTION_LAB_DEVICE, else auto."""
    choice = st.session_state.get("device_choice") or settings.device_setting()
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


@st.cache_resource(max_entries=4)
def _store(root: str, max_running: int, redis: str | None) -> RunStore:
    return open_run_store(Path(root), max_running)  # `redis` only keys the cache


def run_queue() -> RunStore:
    """This process's handle on the run store: on disk and box-wide by default
    (ATTENTION_LAB_RUNS_DIR, ATTENTION_LAB_MAX_RUNS: 2 on CPU, 4 on CUDA), or on Redis for
    several hosts (ATTENTION_LAB_REDIS_URL; the runs dir then mirrors the runs shown here)."""
    return _store(str(settings.runs_dir()), settings.max_runs(), settings.redis_url())


@st.cache_resource(max_entries=24, show_spinner="Loading model…")
def _load_shipped(name: str, device: str) -> Checkpoint:
    return load_checkpoint(shipped_checkpoint_path(name), torch.device(device))


@st.cache_resource(max_entries=16, show_spinner="Loading your model…")
def _load_run(run_id: str, device: str, saved_at: float) -> Checkpoint:
    return load_checkpoint(run_id, torch.device(device))


@st.cache_resource(max_entries=8, show_spinner="Loading the model…")
def _load_installed(name: str, device: str, saved_at: float) -> Checkpoint:
    """An imported model of ATTENTION_LAB_MODELS_DIR: loaded once per process and device
    (GPT-2 small is ~0.5 GB of weights), again only when its folder was written anew."""
    return load_checkpoint(name, torch.device(device))


def run_folder(run_id: str) -> Path:
    """A saved run's folder here (the serving layer's checkpoint source fetches a run
    trained through the Redis queue first). CheckpointError when it cannot be opened."""
    return resolve_checkpoint(run_id)


def load_model(name: str) -> Checkpoint:
    """A shipped checkpoint or a saved run, by name or run id, on the current device.

    Raises CheckpointError with a message for people when the name is unknown, the run
    expired (evicted), has not saved a model yet, or its files are corrupt. Every result
    has meta["weights_sha256"]."""
    device = str(current_device())  # the cached loaders are called by keyword: no signature lookup per call
    if is_run_id(name):
        saved_at = (run_folder(name) / META_FILE).stat().st_mtime
        return _load_run(run_id=name, device=device, saved_at=saved_at)
    if name in installed_models():
        saved_at = (resolve_checkpoint(name) / META_FILE).stat().st_mtime
        return _load_installed(name=name, device=device, saved_at=saved_at)
    return _load_shipped(name=name, device=device)


def remember_run(run_id: str, label: str, task: str) -> None:
    """Offer this run in the explorers of this session (a page adopts ids it is given)."""
    st.session_state.setdefault(MY_MODELS_KEY, {})[run_id] = {"label": label, "task": task}


def checkpoint_label(name: str, installed: dict[str, dict] | None = None) -> str:
    """What a selector shows: shipped names as they are, runs as 'label · run-1a2b3c4d…',
    imported models with their size ('gpt2 · 124M parameters'). installed: installed_models(),
    where the caller labels several names at once."""
    mine = st.session_state.get(MY_MODELS_KEY, {}).get(name)
    if mine:
        return f"{mine['label']} · {name[:12]}…"
    if (meta := (installed_models() if installed is None else installed).get(name)) is not None:
        return f"{name} · {parameter_count(int(meta.get('parameters') or 0))} parameters"
    return name


def parameter_count(n: int) -> str:
    """124,439,808 -> '124M'; 1,234 -> '1.2k'."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.3g}{unit}"
    return str(n)


def checkpoint_labels(names: list[str]) -> Callable[[str], str]:
    """A selector's format_func over `names`: their labels as they are now (a frozen table:
    Streamlit may format again outside this run, where the session's runs cannot be read)."""
    installed = installed_models()
    labels = {name: checkpoint_label(name, installed) for name in names}
    return lambda name: labels.get(name, name)


def _saved_run_task(run_id: str) -> str | None:
    """The task of a saved run, or None when the id has no loadable model here."""
    try:
        return read_meta(run_folder(run_id)).get("task")
    except CheckpointError:
        return None


def _adopt_url_runs(task: str) -> None:
    """A run id in the page's URL (a shared link) becomes a choice; an unknown, expired or
    unfinished one gets a visible notice instead of a silent fallback."""
    for param in URL_CHECKPOINT_PARAMS:
        value = st.query_params.get(param)
        if not value or not value.startswith("run-") or value in st.session_state.get(MY_MODELS_KEY, {}):
            continue
        try:
            meta = read_meta(run_folder(value))
        except CheckpointError as e:
            st.error(
                f"The link's model cannot be opened: {e}. Showing a shipped model instead.",
                icon=":material/link_off:",
            )
            state.explained(param)
            continue
        if meta.get("task") == task:
            label = (
                str(meta.get("command") or "").removeprefix("trained on the /train page as ") or "shared run"
            )
            remember_run(value, label, task)


@st.cache_resource(ttl=600, show_spinner=False)
def shipped_checkpoints() -> dict[str, dict]:
    """name -> metadata (config, metrics, command) of every shipped checkpoint. One read-only
    copy shared by every caller: a page asks for it several times a run, and a private copy
    each time (st.cache_data) cost more than the rest of the call."""
    out = {}
    for name in list_checkpoints():
        try:
            out[name] = read_meta(shipped_checkpoint_path(name))
        except CheckpointError:
            continue
    return out


def installed_models() -> dict[str, dict]:
    """name -> metadata of every imported model in ATTENTION_LAB_MODELS_DIR (an admin adds
    one by importing it there: it appears within a minute, no restart)."""
    return _installed_models(folder=str(settings.models_dir()))  # by keyword, as load_model's


@st.cache_resource(ttl=60, show_spinner=False)
def _installed_models(folder: str) -> dict[str, dict]:  # keyed by the folder; shared, read-only
    out = {}
    for name in backends.installed_models():
        try:
            out[name] = read_meta(resolve_checkpoint(name))
        except CheckpointError:
            continue
    return out


def is_transformer(meta: dict) -> bool:
    """Whether a checkpoint's model is a Transformer (layers of heads), not one of the recurrent
    baselines (`gru`, `bahdanau`) that only /reversal draws."""
    return meta.get("config", {}).get("model", "transformer") == "transformer"


def model_choices(task: str, baselines: bool = False) -> list[str]:
    """Shipped checkpoint names for 'reverse' or 'lm' (with `baselines`, the recurrent ones too),
    the imported models of that kind, then this session's saved runs of that kind (run ids; a
    run id in the page's URL is adopted, see `_adopt_url_runs`). 'lm' (a GPT) includes
    gpt-induction and runs of the induction task."""
    _adopt_url_runs(task)
    shipped = [
        n
        for n, m in shipped_checkpoints().items()
        if m.get("task") == task and (baselines or is_transformer(m))
    ]
    shipped += [n for n, m in installed_models().items() if m.get("task") == task and n not in shipped]
    mine = [
        run_id
        for run_id, entry in st.session_state.get(MY_MODELS_KEY, {}).items()
        if entry["task"] in TASKS
        and TASKS[entry["task"]].model_task == task
        and _saved_run_task(run_id) == task
    ]
    return shipped + mine
