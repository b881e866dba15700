"""Checkpoints: a folder with `model.safetensors` (weights) and `checkpoint.json`
(config, vocabulary, training arguments, metrics, versions, weights checksum).

Nothing is ever unpickled. Shipped checkpoints live in <repo>/checkpoints/<name>/, and a
name is a plain identifier that cannot leave that folder. Other named checkpoints (the
runs trained on /train, by id) are found by installed checkpoint sources.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import math
import os
import platform
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_model, save_model
from torch import nn

from transformer_core.config import ARCH_TASKS, RECURRENT_KINDS, ModelConfig
from transformer_core.errors import CheckpointError, ConfigError
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.io.tokenizers import tokenizer_from_meta
from transformer_core.models import Model, build_model
from transformer_core.plugins import SOURCES_GROUP, load_plugins
from transformer_core.positional import POSITION_SCHEMES


def shipped_folder() -> Path:
    """The shipped checkpoints: package data (transformer_core/checkpoints) when installed
    from a wheel, the checkout's checkpoints/ beside the library otherwise."""
    library = Path(__file__).resolve().parents[1]
    installed = library / "checkpoints"
    return installed if installed.is_dir() else library.parent / "checkpoints"


CHECKPOINTS_DIR = shipped_folder()
WEIGHTS_FILE, META_FILE = "model.safetensors", "checkpoint.json"
FORMAT = "attention-lab-checkpoint/1"
NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
SHIPPED_NAMES = (
    *(f"{task}-{s}" for task in ("reverse", "gpt") for s in POSITION_SCHEMES),
    *(f"reverse-{kind}" for kind in RECURRENT_KINDS),  # the recurrent baselines (train --arch)
    "reverse-postln",  # reverse-sinusoidal's recipe with Post-LN blocks (train --norm-position post)
    "gpt-induction",  # attention-only: a previous-token head feeding an induction head
    "bert-char",  # the GPTs' corpus read both ways: a masked-character model (train --task mlm)
)
MAX_PARAMS_ENV, DEFAULT_MAX_PARAMS = "ATTENTION_LAB_MAX_PARAMS", 200_000_000


def max_params() -> int:
    """The most parameters a model may have here (a shared box's memory bound): the
    environment's ATTENTION_LAB_MAX_PARAMS, 200 million by default."""
    raw = os.environ.get(MAX_PARAMS_ENV, "").strip().replace("_", "")
    if not raw:
        return DEFAULT_MAX_PARAMS
    if not raw.isdigit() or int(raw) < 1:
        raise CheckpointError(f"{MAX_PARAMS_ENV}={raw!r} is not a positive whole number of parameters")
    return int(raw)


def check_parameter_count(count: int, what: str) -> None:
    """CheckpointError naming the count and the limit when a model is too large to load here."""
    limit = max_params()
    if count > limit:
        raise CheckpointError(
            f"{what}: the model has {count:,} parameters; the limit here is {limit:,} "
            f"(set {MAX_PARAMS_ENV} to allow more)"
        )


def safetensors_parameter_count(path: Path) -> int:
    """Elements of every tensor in a safetensors file, read from its header only."""
    with safe_open(str(path), "pt") as f:
        return sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())


@functools.cache
def checkpoint_sources() -> tuple[Callable[[str], Path | None], ...]:
    """Installed finders of named checkpoints beyond the shipped ones, e.g. the serving
    layer's runs (`run-…` ids). Each takes a name and returns its folder, None when the
    name is not its kind, or raises CheckpointError saying why it cannot be opened. Why
    entry points: the library finds them without importing the layers built on it."""
    return tuple(load_plugins(SOURCES_GROUP))


@dataclass
class Checkpoint:
    """A loaded model with everything needed to use and describe it."""

    name: str
    model: Model
    tokenizer: Tokenizer
    meta: dict[str, Any]
    folder: Path | None = None  # where it was loaded from (None: built in memory)

    @property
    def config(self) -> ModelConfig:
        return self.model.config

    @property
    def task(self) -> str:
        return ARCH_TASKS[self.config.arch]

    @property
    def metrics(self) -> dict[str, Any]:
        return self.meta.get("metrics", {})

    @property
    def training_task(self) -> str | None:
        """The task it was trained on as recorded ("reverse", "lm", "induction"); None if unrecorded."""
        return (self.meta.get("train_args") or {}).get("task")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def save_checkpoint(
    folder: str | Path,
    model: Model,
    tokenizer: Tokenizer,
    *,
    train_args: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    command: str | None = None,
    label: str | None = None,
    source: dict[str, Any] | None = None,
) -> Path:
    """Write weights and metadata into folder (created if needed); returns the folder.
    `label` is a name for people (a run's "my-reverse-rope 14:02"); `name` is the folder's.
    `source` says where an imported model came from. The tokenizer records its kind (and
    writes its file, e.g. a BPE tokenizer.json); character vocabularies go in "vocab"."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / WEIGHTS_FILE
    save_model(model, str(weights))
    tokenizer_meta = tokenizer.to_meta(folder)
    meta: dict[str, Any] = {
        "format": FORMAT,
        "name": folder.name,
        "label": label or folder.name,
        "task": ARCH_TASKS[model.config.arch],
        "config": model.config.to_dict(),
        "tokenizer": tokenizer_meta,
        "vocab": None if "file" in tokenizer_meta else tokenizer.vocab,
        "train_args": train_args or {},
        "metrics": metrics or {},
        "command": command,
        "parameters": sum(p.numel() for p in model.parameters()),
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "weights_sha256": _sha256(weights),
    }
    if source is not None:
        meta["source"] = source
    (folder / META_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    return folder


def shipped_checkpoint_path(name: str, folder: Path = CHECKPOINTS_DIR) -> Path:
    """The folder of a shipped checkpoint. Only plain names are accepted, so a name (from
    a URL, say) can never point outside `folder`."""
    if not NAME_PATTERN.match(name) or not (folder / name / META_FILE).is_file():
        available = ", ".join(list_checkpoints(folder)) or "none"
        raise CheckpointError(f"unknown checkpoint {name!r}; available: {available}")
    return folder / name


def resolve_checkpoint(name_or_path: str | Path) -> Path:
    """A shipped name ('reverse-rope'), a name an installed source knows (a run id
    'run-3f9c...'), or, on the command line, a path to a folder."""
    text = str(name_or_path)
    if NAME_PATTERN.match(text) and (CHECKPOINTS_DIR / text).is_dir():
        return CHECKPOINTS_DIR / text
    if "/" not in text and "\\" not in text:  # a name, not a path: an installed source may know it
        for source in checkpoint_sources():
            if (folder := source(text)) is not None:
                return folder
    path = Path(text)
    if path.is_dir():
        return path
    if "/" not in text and "\\" not in text:
        available = ", ".join(list_checkpoints()) or "none"
        raise CheckpointError(f"unknown checkpoint {text!r}; available: {available}")
    raise CheckpointError(f"checkpoint folder not found: {text}")


def read_meta(folder: Path) -> dict[str, Any]:
    meta_path = folder / META_FILE
    if not meta_path.is_file():
        raise CheckpointError(f"{folder.name}: {META_FILE} is missing")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{folder.name}: {META_FILE} is not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{folder.name}: {META_FILE} is not an Attention Lab checkpoint")
    return meta


def load_checkpoint(name_or_path: str | Path, device: torch.device | str = "cpu") -> Checkpoint:
    """Load weights (safetensors, never pickle) into a freshly built model, in eval mode."""
    folder = resolve_checkpoint(name_or_path)
    meta = read_meta(folder)
    try:
        config = ModelConfig.from_dict(meta.get("config"))
        tokenizer = tokenizer_from_meta(meta, folder)
    except CheckpointError:
        raise
    except (ConfigError, ValueError, TypeError) as e:
        raise CheckpointError(f"{folder.name}: bad metadata: {e}") from None
    if len(tokenizer) != config.vocab_size:
        raise CheckpointError(
            f"{folder.name}: vocabulary has {len(tokenizer)} entries but config.vocab_size "
            f"is {config.vocab_size}"
        )
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise CheckpointError(f"{folder.name}: {WEIGHTS_FILE} is missing")
    try:
        check_parameter_count(safetensors_parameter_count(weights), folder.name)
    except SafetensorError as e:
        raise CheckpointError(f"{folder.name}: {WEIGHTS_FILE} is corrupt ({e})") from None
    expected, actual = meta.get("weights_sha256"), _sha256(weights)
    if expected and actual != expected:
        raise CheckpointError(
            f"{folder.name}: {WEIGHTS_FILE} does not match its recorded checksum (truncated or corrupt file)"
        )
    meta["weights_sha256"] = actual  # every loaded checkpoint has one (caches key on it)
    model: nn.Module = build_model(config)
    try:
        load_model(model, str(weights), strict=True, device="cpu")
    except SafetensorError as e:
        raise CheckpointError(f"{folder.name}: {WEIGHTS_FILE} is corrupt ({e})") from None
    except RuntimeError as e:
        raise CheckpointError(f"{folder.name}: weights do not match the config ({e})") from None
    model.to(device).eval()
    return Checkpoint(folder.name, model, tokenizer, meta, folder)


def list_checkpoints(folder: Path = CHECKPOINTS_DIR) -> list[str]:
    """Names of the checkpoint folders shipped in `folder`, shipped order first."""
    if not folder.is_dir():
        return []
    found = {p.name for p in folder.iterdir() if (p / META_FILE).is_file()}
    return [n for n in SHIPPED_NAMES if n in found] + sorted(found - set(SHIPPED_NAMES))
