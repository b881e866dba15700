"""Which run store serves this process: the on-disk one (one box, the default) or Redis
(several hosts, ATTENTION_LAB_REDIS_URL). The one place that chooses; Redis and RQ are
imported only when chosen. Also the model library's two checkpoint sources beyond the
shipped ones: runs by id, and imported models in ATTENTION_LAB_MODELS_DIR by name.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import attention_lab.serving.settings as settings
from attention_lab.serving.ids import is_run_id, run_checkpoint_path
from attention_lab.serving.sqlite_store import SQLiteRunStore
from attention_lab.serving.store import RunStore
from transformer_core.errors import CheckpointError, ConfigError
from transformer_core.io import META_FILE
from transformer_core.io.checkpoint import NAME_PATTERN, list_checkpoints


def open_run_store(root: Path | None = None, max_running: int | None = None) -> RunStore:
    """The run store this process uses; `root` is the runs folder (for Redis: the local
    mirror of the runs shown here), `max_running` the on-disk store's cap (with Redis the
    cap is the number of workers)."""
    url = settings.redis_url()
    if url:
        from attention_lab.serving.redis_store import RedisRunStore

        return RedisRunStore(url, root)
    return SQLiteRunStore(root, max_running=max_running)


def fetch_run(run_id: str, root: Path | None = None) -> None:
    """With Redis, bring a finished run's checkpoint into the local runs folder so its id
    opens here (pages, CLI). Without Redis, or for anything but a run id: nothing to do."""
    url = settings.redis_url()
    if not url or not is_run_id(run_id):
        return
    from redis.exceptions import RedisError

    from attention_lab.serving.redis_store import RedisRunStore

    with contextlib.suppress(RedisError, ConfigError):  # unreachable: the id is then "unknown here"
        RedisRunStore(url, root).info(run_id)


def run_checkpoint_source(name: str) -> Path | None:
    """The model library's hook (a `transformer_core.checkpoint_sources` entry point): the
    folder of run `name`; fetched from Redis only when it is not here yet (every page run
    opens its models by name: a run already here asks Redis nothing); None for a name that
    is no run id, a CheckpointError for a run that cannot be opened."""
    if not name.startswith("run-"):
        return None
    try:
        return run_checkpoint_path(name)
    except CheckpointError:
        fetch_run(name)
        return run_checkpoint_path(name)


def installed_models() -> list[str]:
    """Names of the checkpoint folders in ATTENTION_LAB_MODELS_DIR (sorted; [] when unset)."""
    folder = settings.models_dir()
    if folder is None:
        return []
    return sorted(name for name in list_checkpoints(folder) if NAME_PATTERN.match(name))


def model_checkpoint_source(name: str) -> Path | None:
    """The model library's hook for imported models: the folder of `name` in
    ATTENTION_LAB_MODELS_DIR; None when unset or when `name` is not a plain name there
    (a name can never leave the folder)."""
    folder = settings.models_dir()
    if folder is None or not NAME_PATTERN.match(name) or not (folder / name / META_FILE).is_file():
        return None
    return folder / name
