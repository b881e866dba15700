"""Every training default in one place: model sizes, optimiser settings, report lengths,
the /train page's run schedule and the bounds on what one run may ask for.

Why: the command line, the /train page, "Train this row" and the benchmarks used to keep
their own copies of these numbers; now they all read them from here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import torch

from transformer_core.config import ModelConfig
from transformer_core.device import resolve_device
from transformer_core.errors import ConfigError
from transformer_core.io.data import corpus_tokenizer, load_corpus, reversal_tokenizer
from transformer_core.models import GPT, Seq2Seq, build_model
from transformer_core.train.induction import InductionTask
from transformer_core.train.tasks import LanguageModelTask, ReversalTask, Task
from transformer_core.train.trainer import TrainConfig

TaskName = Literal["reverse", "lm", "induction"]
SizeName = Literal["tiny", "small", "medium"]

REPORT_LENGTHS: tuple[int, ...] = (3, 5, 7, 10, 12, 15)  # reversal: training lengths and beyond
TRAIN_LENGTHS: tuple[int, int] = (3, 10)  # reversal strings in training: min_len, max_len
DEFAULT_SIZE: SizeName = "small"

ARCH = {  # the parts of a model's shape that a size does not change
    "reverse": dict(arch="seq2seq", max_len=32),
    "lm": dict(arch="gpt", max_len=128),
    "induction": dict(arch="gpt", max_len=64, mlp=False),  # attention-only (Olsson et al. 2022)
}
SIZES: dict[str, dict[str, dict[str, int]]] = {  # task -> size -> shape; "small" is what ships
    "reverse": {
        "tiny": dict(d_model=32, n_layers=1, n_heads=2, d_ff=128),
        "small": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
        "medium": dict(d_model=128, n_layers=3, n_heads=4, d_ff=512),
    },
    "lm": {
        "tiny": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
        "small": dict(d_model=128, n_layers=4, n_heads=4, d_ff=512),
        "medium": dict(d_model=192, n_layers=6, n_heads=6, d_ff=768),
    },
    "induction": {  # d_ff unused (no MLP); two layers: a previous-token head feeds an induction head
        "tiny": dict(d_model=32, n_layers=2, n_heads=2, d_ff=128),
        "small": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
    },
}


TASK_POSITIONS: dict[str, str] = {  # the scheme /train picks with the task, where one is needed
    "induction": "learned",  # the shipped recipe: induction heads form by ~1000 steps (rope: not in 1500)
}


@dataclass(frozen=True)
class OptimDefaults:
    """Steps, batch size and peak learning rate a task trains with unless told otherwise."""

    steps: int
    batch_size: int
    lr: float


OPTIM: dict[str, OptimDefaults] = {
    "reverse": OptimDefaults(steps=3000, batch_size=64, lr=2e-3),
    "lm": OptimDefaults(steps=1000, batch_size=32, lr=3e-3),
    "induction": OptimDefaults(steps=1500, batch_size=32, lr=3e-3),
}


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


def model_shape(task: str, size: str = DEFAULT_SIZE, **overrides: Any) -> dict[str, Any]:
    """The model's shape fields (no vocab_size, no positions) for a task and size.

    Overriding d_model without d_ff keeps the usual d_ff = 4 * d_model.
    """
    if task not in SIZES:
        raise ConfigError(f"task: {task!r} is not one of {tuple(SIZES)}")
    if size not in SIZES[task]:
        raise ConfigError(f"size: {size!r} is not one of {tuple(SIZES[task])}")
    shape = {**ARCH[task], **SIZES[task][size]}
    overrides = {k: v for k, v in overrides.items() if v is not None}
    if "d_model" in overrides and "d_ff" not in overrides:
        overrides["d_ff"] = 4 * overrides["d_model"]
    return {**shape, **overrides}


def model_config(
    task: str, positions: str, vocab_size: int, size: str = DEFAULT_SIZE, **overrides: Any
) -> ModelConfig:
    """A validated ModelConfig of the given size; `small` is the shipped one."""
    return ModelConfig(vocab_size=vocab_size, positions=positions, **model_shape(task, size, **overrides))


PAGE_EVALS: dict[str, int] = {  # evaluations per /train run; default 5
    "induction": 20,  # each carries every head's detector scores: the curves show the induction bump
}


def page_schedule(steps: int, task: str = "reverse") -> dict[str, int]:
    """Warm-up, evaluation and snapshot intervals of a /train run of `steps` steps:
    5 evaluations (PAGE_EVALS of the task) and about 40 attention snapshots, whatever the length."""
    return {
        "warmup": min(200, steps // 10),
        "eval_every": max(1, steps // PAGE_EVALS.get(task, 5)),
        "snapshot_every": max(1, steps // 40),
    }


def optim_defaults(task: str) -> OptimDefaults:
    if task not in OPTIM:
        raise ConfigError(f"task: {task!r} is not one of {tuple(OPTIM)}")
    return OPTIM[task]


def train_config(task: str, **fields: Any) -> TrainConfig:
    """A TrainConfig with the task's default steps, batch size and learning rate; `fields`
    (None values ignored) override them."""
    given = {k: v for k, v in fields.items() if v is not None}
    defaults = optim_defaults(task)
    base = dict(steps=defaults.steps, batch_size=defaults.batch_size, lr=defaults.lr)
    if task == "reverse":
        base.update(min_len=TRAIN_LENGTHS[0], max_len=TRAIN_LENGTHS[1])
    return TrainConfig(task=task, **{**base, **given})


def page_config(
    task: str,
    *,
    steps: int | None = None,
    batch_size: int | None = None,
    lr: float | None = None,
    schedule: str = "cosine",
    device: str = "auto",
) -> TrainConfig:
    """The config of a run started on /train (the form and "Train this row" alike):
    the task's defaults, its evaluations (page_schedule) and about 40 attention snapshots."""
    steps = steps or optim_defaults(task).steps
    LIMITS.check(steps=steps, **({"batch_size": batch_size} if batch_size else {}))
    return train_config(
        task,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        schedule=schedule,
        device=device,
        **page_schedule(steps, task),
    )


def build_task(train: TrainConfig, text: str | None = None) -> Task:
    """The task of a run; `text` overrides the LM corpus path. Reversal runs report every
    REPORT_LENGTHS length (randomized positions are set by `prepare_run`, which knows
    the model's max_len)."""
    if train.task == "reverse":
        return ReversalTask(reversal_tokenizer(), train.min_len, train.max_len, eval_lengths=REPORT_LENGTHS)
    if train.task == "induction":  # random lowercase segments repeated (transformer_core.train.induction)
        return InductionTask(reversal_tokenizer())
    if train.random_positions:
        raise ConfigError("random_positions: only the reversal task supports it")
    text = load_corpus(train.corpus) if text is None else text
    return LanguageModelTask.from_text(corpus_tokenizer(text), text, train.block_size)


def prepare_run(
    train: TrainConfig, positions: str, text: str | None = None, size: str = DEFAULT_SIZE, **overrides: Any
) -> tuple[GPT | Seq2Seq, Task]:
    """A seeded model of the task's preset size (plus overrides) on the configured device,
    and its task."""
    device = resolve_device(train.device)
    task = build_task(train, text)
    overrides = dict(overrides)
    if isinstance(task, LanguageModelTask):
        overrides.setdefault("max_len", task.block_size)
    config = model_config(train.task, positions, len(task.tokenizer), size, **overrides)
    if train.random_positions and isinstance(task, ReversalTask):
        task = dataclasses.replace(task, random_positions=config.max_len)
    torch.manual_seed(train.seed)
    return build_model(config).to(device), task
