"""What a run asks for, and the bounds a shared box holds it to.

`RunRequest` is the JSON a page (or script) submits and a run process trains from;
`LIMITS` bounds it whatever the caller asked for (the /train widgets use the same bounds);
`page_config` is the config of a run someone watches: the task's defaults, its
evaluations and about 40 attention snapshots.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attention_lab.serving.ids import RunError
from transformer_core.errors import ConfigError, InputError
from transformer_core.train import TrainConfig, model_shape, task_recipe, train_config

REQUEST_FILE = "request.json"
MAX_CORPUS_CHARS = 5_000_000
SNAPSHOTS_PER_RUN = 40


@dataclass(frozen=True)
class Limits:
    """What one run on the shared box may ask for (the page's widgets use the same bounds)."""

    steps: tuple[int, int] = (1, 20_000)
    batch_size: tuple[int, int] = (1, 256)
    d_model: tuple[int, int] = (16, 256)
    n_layers: tuple[int, int] = (1, 6)
    n_heads: tuple[int, int] = (1, 8)

    def check(self, **values: int) -> None:
        """Raise ConfigError naming the first value outside its bound."""
        for name, value in values.items():
            low, high = getattr(self, name)
            if not low <= value <= high:
                raise ConfigError(f"{name}: must be in {low}..{high}, got {value}")


LIMITS = Limits()


def page_schedule(steps: int, task: str = "reverse") -> dict[str, int]:
    """Warm-up, evaluation and snapshot intervals of a watched run of `steps` steps: the
    task's watched_evals evaluations and about 40 attention snapshots, whatever the length."""
    return {
        "warmup": min(200, steps // 10),
        "eval_every": max(1, steps // task_recipe(task).watched_evals),
        "snapshot_every": max(1, steps // SNAPSHOTS_PER_RUN),
    }


def page_config(
    task: str,
    *,
    steps: int | None = None,
    batch_size: int | None = None,
    lr: float | None = None,
    schedule: str = "cosine",
    device: str = "auto",
    warmup: bool = True,
) -> TrainConfig:
    """The config of a run started on /train (the form and "Train this row" alike); without
    `warmup` the learning rate starts at its peak."""
    watched = task_recipe(task).page_optim
    steps = steps or watched.steps
    LIMITS.check(steps=steps, **({"batch_size": batch_size} if batch_size else {}))
    return train_config(
        task,
        steps=steps,
        batch_size=batch_size or watched.batch_size,
        lr=lr or watched.lr,
        schedule=schedule,
        device=device,
        **{**page_schedule(steps, task), **({} if warmup else {"warmup": 0})},
    )


@dataclass(frozen=True)
class RunRequest:
    """What a run process trains: the TrainConfig fields, the positional scheme, the size
    preset and shape overrides, and a label for people ("my-reverse-rope 14:02")."""

    train: dict[str, Any]
    positions: str
    size: str = "small"
    shape: dict[str, int] = field(default_factory=dict)
    label: str = "run"
    owner: str = ""  # the person who asked (attention_lab.accounts.sign_in.person_id); "" from scripts

    def train_config(self) -> TrainConfig:
        return TrainConfig(**self.train)

    def validate(self) -> None:
        """Bounds a shared box enforces whatever the caller (page, script) asked for."""
        config = self.train_config()
        shape = model_shape(config.task, self.size, **self.shape)
        LIMITS.check(
            steps=config.steps,
            batch_size=config.batch_size,
            d_model=shape["d_model"],
            n_layers=shape["n_layers"],
            n_heads=shape["n_heads"],
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def load(cls, folder: Path) -> RunRequest:
        try:
            data = json.loads((folder / REQUEST_FILE).read_text(encoding="utf-8"))
            return cls(**data)
        except (OSError, ValueError, TypeError) as e:
            raise RunError(f"{folder.name}: {REQUEST_FILE} is unreadable ({e})") from None


MAX_OWNER_CHARS = 200


def check_submission(request: RunRequest, corpus: str | None) -> None:
    """What every run store (on disk, Redis) checks before it accepts a run: the shared
    box's LIMITS and the corpus size (the person's own limits: `serving.quota`)."""
    request.validate()
    if len(request.owner) > MAX_OWNER_CHARS:
        raise InputError(f"owner: at most {MAX_OWNER_CHARS} characters, got {len(request.owner)}")
    if corpus is not None and len(corpus) > MAX_CORPUS_CHARS:
        raise InputError(f"corpus: at most {MAX_CORPUS_CHARS:,} characters, got {len(corpus):,}")
