"""Runs from the registry's defaults: a task's model shape and config, and the seeded
model with its task, ready to train.

Why: the command line, the /train page, "Train this row" and the benchmarks used to keep
their own copies of these numbers; now they all read `TASKS` through here.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from transformer_core.config import RECURRENT_KINDS, ModelConfig
from transformer_core.device import resolve_device
from transformer_core.errors import ConfigError
from transformer_core.models import Model, build_model
from transformer_core.train.mlm import MaskedLanguageModelTask
from transformer_core.train.registry import DEFAULT_SIZE, task_recipe
from transformer_core.train.tasks import LanguageModelTask, ReversalTask, Task
from transformer_core.train.trainer import TrainConfig


def model_shape(task: str, size: str = DEFAULT_SIZE, **overrides: Any) -> dict[str, Any]:
    """The model's shape fields (no vocab_size, no positions) for a task and size; the
    override model="gru" (or another kind of the task's recipe) picks that kind's sizes.

    Overriding d_model without d_ff keeps the usual d_ff = 4 * d_model.
    """
    recipe = task_recipe(task)
    kind = overrides.pop("model", None) or "transformer"
    sizes = recipe.sizes_of(kind)
    if size not in sizes:
        raise ConfigError(f"size: {size!r} is not one of {tuple(sizes)}")
    shape = {"arch": recipe.arch, **recipe.shape, **sizes[size], "model": kind}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if "d_model" in overrides and "d_ff" not in overrides:
        overrides["d_ff"] = 4 * overrides["d_model"]
    return {**shape, **overrides}


def default_positions(model: str = "transformer") -> str:
    """The scheme a run uses unless told: none for a recurrent kind (the recurrence orders the
    tokens), sinusoidal (Vaswani's) for a Transformer."""
    return "none" if model in RECURRENT_KINDS else "sinusoidal"


def model_config(
    task: str, positions: str, vocab_size: int, size: str = DEFAULT_SIZE, **overrides: Any
) -> ModelConfig:
    """A validated ModelConfig of the given size; `small` is the shipped one."""
    return ModelConfig(vocab_size=vocab_size, positions=positions, **model_shape(task, size, **overrides))


def train_config(task: str, **fields: Any) -> TrainConfig:
    """A TrainConfig with the task's default steps, batch size and learning rate; `fields`
    (None values ignored) override them."""
    recipe = task_recipe(task)
    given = {k: v for k, v in fields.items() if v is not None}
    base = dict(steps=recipe.optim.steps, batch_size=recipe.optim.batch_size, lr=recipe.optim.lr)
    return TrainConfig(task=task, **{**base, **recipe.config_defaults, **given})


def prepare_run(
    train: TrainConfig, positions: str, text: str | None = None, size: str = DEFAULT_SIZE, **overrides: Any
) -> tuple[Model, Task]:
    """A seeded model of the task's preset size (plus overrides) on the configured device,
    and its task; `text` overrides the LM corpus."""
    device = resolve_device(train.device)
    if train.random_positions and train.task != "reverse":
        raise ConfigError("random_positions: only the reversal task supports it")
    task = task_recipe(train.task).build(train, text)
    overrides = dict(overrides)
    if isinstance(task, (LanguageModelTask, MaskedLanguageModelTask)):
        overrides.setdefault("max_len", task.block_size)
    config = model_config(train.task, positions, len(task.tokenizer), size, **overrides)
    if train.random_positions and config.model != "transformer":
        raise ConfigError(f"random_positions: a {config.model!r} model has no positions to randomize")
    if train.random_positions and isinstance(task, ReversalTask):
        task = dataclasses.replace(task, random_positions=config.max_len)
    torch.manual_seed(train.seed)
    return build_model(config).to(device), task
