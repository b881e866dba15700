"""A trainer that knows nothing about the model: it asks a task for batches and losses
and reports progress as events. Used by the command line and by the app's /train page."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from transformer_core.config import validate_fields
from transformer_core.errors import ConfigError
from transformer_core.train.registry import TASKS
from transformer_core.train.schedules import vaswani_lr, warmup_cosine_lr
from transformer_core.train.tasks import Task

_LOG = logging.getLogger(__name__)

if TYPE_CHECKING:  # a type checker cannot read a Literal built at runtime
    TaskName = str
else:  # the choices are the registry's names: validate_fields reads them with get_args
    TaskName = Literal[tuple(TASKS)]


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run needs besides the model's shape; saved in the checkpoint."""

    task: TaskName = "reverse"
    steps: int = 3000
    batch_size: int = 64
    lr: float = 2e-3
    schedule: Literal["cosine", "vaswani", "constant"] = "cosine"
    warmup: int = 200
    weight_decay: float = 0.01
    label_smoothing: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0
    device: Literal["auto", "cpu", "cuda"] = "auto"
    eval_every: int = 500
    snapshot_every: int = 0
    min_len: int = 3
    max_len: int = 10
    block_size: int = 128
    corpus: str | None = None
    random_positions: bool = False  # reversal: randomized positional encodings (Ruoss et al.)

    def __post_init__(self) -> None:
        validate_fields(self, min_int=0)
        for name in ("steps", "batch_size", "min_len", "block_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be >= 1, got {getattr(self, name)}")
        if self.max_len < self.min_len:
            raise ConfigError(f"max_len: {self.max_len} is below min_len={self.min_len}")
        if not 0 < self.lr <= 1:
            raise ConfigError(f"lr: must be in (0, 1], got {self.lr}")
        if not 0 <= self.label_smoothing < 1:
            raise ConfigError(f"label_smoothing: must be in [0, 1), got {self.label_smoothing}")

    def lr_at(self, step: int) -> float:
        """Learning rate of 0-based `step`. Vaswani's schedule is scaled so its peak (at
        step == warmup) equals self.lr; its d_model factor cancels in that ratio."""
        if self.schedule == "vaswani":
            warmup = max(self.warmup, 1)
            return self.lr * vaswani_lr(step + 1, 1, warmup) / vaswani_lr(warmup, 1, warmup)
        if self.schedule == "cosine":
            return warmup_cosine_lr(step, self.lr, self.warmup, self.steps)
        return self.lr

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- events


@dataclass(frozen=True)
class StepEvent:
    step: int  # steps done so far (1-based)
    total: int
    loss: float
    lr: float
    tokens_per_s: float
    elapsed: float
    grad_norms: dict[str, float] = field(default_factory=dict)  # per block ("encoder.0"), before clipping


@dataclass(frozen=True)
class EvalEvent:
    step: int
    metrics: dict


@dataclass(frozen=True)
class SnapshotEvent:
    """Attention of the task's fixed probe input at this step."""

    step: int
    attention: dict


@dataclass(frozen=True)
class DoneEvent:
    step: int
    metrics: dict
    cancelled: bool
    elapsed: float


TrainEvent = StepEvent | EvalEvent | SnapshotEvent | DoneEvent


def evaluation_due(step: int, every: int, total: int) -> bool:
    """Evaluate at every `every`-th step and three times before the first (every/8, /4, /2),
    so a watched run's chart shows the early rise rather than starting where it has already
    risen; never at the last step (the end evaluates anyway) nor when every is 0."""
    if not every or step >= total:
        return False
    return step % every == 0 or step in {every // 8, every // 4, every // 2} - {0}


def block_parameters(model: nn.Module) -> dict[str, list[nn.Parameter]]:
    """Parameters per block of a stack, by name: 'encoder.0', 'decoder.1', 'blocks.2' (a DDP
    wrapper's 'module.' dropped); what is not in a numbered block is left out."""
    blocks: dict[str, list[nn.Parameter]] = {}
    for name, p in model.named_parameters():
        found = re.match(r"(?:module\.)?(\w+\.\d+)\.", name)
        if found:
            blocks.setdefault(found.group(1), []).append(p)
    return blocks


class Trainer:
    """AdamW with a schedule, gradient clipping and optional label smoothing.

    `run()` yields events; setting `stop` (a threading.Event) ends the run after the
    current step. On CUDA the forward pass runs under bf16 autocast.
    """

    def __init__(
        self, model: nn.Module, task: Task, config: TrainConfig, stop: threading.Event | None = None
    ) -> None:
        self.model, self.task, self.config = model, task, config
        self.stop = stop or threading.Event()
        self.device = next(model.parameters()).device
        self.blocks = block_parameters(model)
        decay = [p for p in model.parameters() if p.dim() >= 2]
        no_decay = [p for p in model.parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": config.weight_decay},
                {"params": no_decay, "weight_decay": 0.0},
            ],
            lr=config.lr,
            betas=(0.9, 0.98),
        )

    def _grad_norms(self) -> dict[str, float]:
        """Each block's gradient norm (all its parameters as one vector), before clipping."""
        norms = {}
        for name, params in self.blocks.items():
            grads = [p.grad for p in params if p.grad is not None]
            norms[name] = float(nn.utils.get_total_norm(grads)) if grads else 0.0
        return norms

    def _autocast(self) -> contextlib.AbstractContextManager:
        if self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def run(self) -> Iterator[TrainEvent]:
        cfg = self.config
        generator = torch.Generator().manual_seed(cfg.seed)
        self.model.train()
        start = time.perf_counter()
        tokens_seen, step = 0, 0
        cancelled = False
        _LOG.debug("training %s: %d steps, batch %d, on %s", cfg.task, cfg.steps, cfg.batch_size, self.device)
        for step in range(1, cfg.steps + 1):
            if self.stop.is_set():
                cancelled, step = True, step - 1
                break
            lr = cfg.lr_at(step - 1)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            batch = self.task.batch(cfg.batch_size, generator, self.device)
            with self._autocast():
                loss, n_tokens = self.task.loss(self.model, batch, cfg.label_smoothing)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            norms = self._grad_norms()
            if cfg.grad_clip > 0:
                nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip)
            self.optimizer.step()
            tokens_seen += n_tokens
            elapsed = time.perf_counter() - start
            yield StepEvent(
                step, cfg.steps, float(loss.detach()), lr, tokens_seen / max(elapsed, 1e-9), elapsed, norms
            )
            # at the first step, every snapshot_every and the last: a scrubber ends on the run's end
            if cfg.snapshot_every and (step % cfg.snapshot_every == 0 or step in (1, cfg.steps)):
                yield SnapshotEvent(step, self.task.snapshot(self.model))
            if evaluation_due(step, cfg.eval_every, cfg.steps):
                yield EvalEvent(step, self.task.evaluate(self.model))
        metrics = {} if cancelled else self.task.evaluate(self.model)  # a stop returns at once
        self.model.eval()
        elapsed = time.perf_counter() - start
        ending = "stopped" if cancelled else "ended"
        _LOG.debug("training %s %s after %d steps in %.1f s", cfg.task, ending, step, elapsed)
        yield DoneEvent(step, metrics, cancelled, elapsed)
