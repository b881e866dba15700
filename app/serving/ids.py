"""Run ids and their folders: the one place that turns a `run-…` id into a path.

A run id is `run-` + hex (128 random bits when made here): unguessable, so it is the only
handle to a run, valid as `checkpoint=` in page URLs and as CKPT on the command line.
`backends.run_checkpoint_source` is how the model library finds a run's checkpoint by its
id (a `transformer_core.checkpoint_sources` entry point), so the library never needs to
know about runs.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from attention_lab.serving.settings import runs_dir
from transformer_core.errors import CheckpointError
from transformer_core.io import META_FILE

RUN_ID_PATTERN = re.compile(r"^run-[0-9a-f]{16,64}$")


class RunError(ValueError):
    """A run cannot be submitted or found; the message is meant for the user."""


def new_run_id() -> str:
    """`run-` + 32 hex characters (128 random bits): unguessable, so it can be the only handle."""
    return "run-" + secrets.token_hex(16)


def is_run_id(text: str) -> bool:
    return bool(RUN_ID_PATTERN.match(text))


def run_folder(root: Path, run_id: str) -> Path:
    """`root/<run id>`; anything but a run id is a RunError (never a path out of root)."""
    if not is_run_id(run_id):
        raise RunError(f"{run_id!r} is not a run id")
    return root / run_id


def run_checkpoint_path(run_id: str, root: Path | None = None) -> Path:
    """The folder of a saved run. An id that is malformed, unknown, evicted or whose run has
    not saved a model (still training, or stopped before it started) is a CheckpointError."""
    if not is_run_id(run_id):
        raise CheckpointError(f"{run_id!r} is not a run id (run- followed by 16 or more hex characters)")
    folder = (root or runs_dir()) / run_id
    if not folder.is_dir():
        raise CheckpointError(
            f"unknown or expired run {run_id}: no such run is stored here (old runs are deleted "
            "first when the runs folder is full)"
        )
    if not (folder / META_FILE).is_file():
        raise CheckpointError(
            f"run {run_id} has no saved model yet (still training, or stopped before it began)"
        )
    return folder
