"""Data-parallel training under `torchrun --nproc_per_node=N -m transformer_core train ...`.

Why: N processes must train the same model as one process with the same global batch, and
the Trainer must not know: a sharded task, a DDP-wrapped model and a rank-0 event filter
compose around it. Everything about process groups lives in this file.

Each rank draws the same global batch (same seed), keeps its contiguous rows and scales its
loss so that DDP's gradient average is the gradient of the global batch's mean loss. With
dropout > 0 each rank draws its own dropout masks from its own RNG stream, so runs match
the single process only in distribution; every shipped preset has dropout 0.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from transformer_core.device import rank_device
from transformer_core.errors import ConfigError
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.train.tasks import Batch, Task
from transformer_core.train.trainer import StepEvent, TrainEvent
from transformer_core.vocab import PAD_ID

BACKENDS = {"cpu": "gloo", "cuda": "nccl"}  # process-group backend per device type


@dataclass(frozen=True)
class World:
    """This process's place among torchrun's processes; World() is a plain single process."""

    rank: int = 0
    local_rank: int = 0
    size: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.size > 1


def world_from_env(environ: Mapping[str, str] = os.environ) -> World:
    """torchrun's RANK, LOCAL_RANK and WORLD_SIZE; without them, World() (rank 0 of 1)."""
    if "WORLD_SIZE" not in environ:
        return World()
    try:
        world = World(int(environ["RANK"]), int(environ.get("LOCAL_RANK", 0)), int(environ["WORLD_SIZE"]))
    except (KeyError, ValueError) as e:
        raise ConfigError(f"torchrun environment: RANK / LOCAL_RANK / WORLD_SIZE unreadable ({e})") from e
    if not 0 <= world.rank < world.size:
        raise ConfigError(f"torchrun environment: RANK={world.rank} outside WORLD_SIZE={world.size}")
    return world


def check_global_batch(batch_size: int, world: World) -> None:
    """The global batch splits into equal shards, one per process (a clear error otherwise)."""
    if batch_size % world.size:
        fits = [n for n in range(1, batch_size + 1) if batch_size % n == 0]
        raise ConfigError(
            f"batch_size: the global batch of {batch_size} does not divide among {world.size} processes; "
            f"use --batch-size a multiple of {world.size} or --nproc_per_node one of {fits}"
        )


@contextmanager
def process_group(world: World, device_choice: str) -> Iterator[None]:
    """Inside: this rank's device is current and the process group is up (nothing for one
    process). A clean exit waits for every rank; the group is destroyed in any case."""
    if not world.distributed:
        yield
        return
    device = rank_device(device_choice, world.local_rank)
    dist.init_process_group(
        BACKENDS[device.type],
        rank=world.rank,
        world_size=world.size,
        device_id=device if device.type == "cuda" else None,
    )
    try:
        yield
        dist.barrier()
    finally:
        dist.destroy_process_group()


# ---------------------------------------------------------------- data shards


@dataclass(frozen=True)
class ShardBatch(Batch):
    """One rank's rows of the global batch. `scale` = world size x this shard's share of the
    global batch's scored targets: the shard's mean loss times it, averaged over ranks, is
    the global mean loss (shards of reversal strings hold different numbers of non-PAD targets)."""

    scale: float = 1.0


def shard_batch(batch: Batch, rank: int, world_size: int) -> ShardBatch:
    """Rows [rank * B/W, (rank + 1) * B/W) of a global batch of B rows. Options (e.g. the
    random positions (T,)) are shared by every row of the batch, so each shard keeps them whole."""
    size = batch.targets.size(0)
    if size % world_size:
        raise ConfigError(
            f"batch_size: a global batch of {size} does not divide among {world_size} processes"
        )
    per = size // world_size
    rows = slice(rank * per, (rank + 1) * per)
    scored = batch.targets != PAD_ID  # (B, T) the positions a task's loss counts
    total = int(scored.sum())
    scale = world_size * int(scored[rows].sum()) / total if total else 1.0
    inputs = tuple(x[rows] for x in batch.inputs)  # each (B, ...) -> (B/W, ...)
    return ShardBatch(inputs, batch.targets[rows], batch.options, scale=scale)


def unwrap(model: nn.Module) -> nn.Module:
    """The model itself (its own methods, state-dict keys without `module.`), DDP or not."""
    return model.module if isinstance(model, DistributedDataParallel) else model


@dataclass(frozen=True)
class ShardedTask:
    """A task whose batches are this rank's shard of the global batch; it evaluates and
    snapshots on rank 0 only (other ranks report nothing, they would repeat rank 0)."""

    inner: Task
    rank: int
    world_size: int

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def tokenizer(self) -> CharTokenizer:
        return self.inner.tokenizer

    @property
    def probe(self) -> str:
        return self.inner.probe

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device) -> ShardBatch:
        # every rank draws the whole global batch from the same seeded generator: the
        # generators stay in step, and the shards are disjoint and cover it exactly once
        return shard_batch(self.inner.batch(batch_size, generator, device), self.rank, self.world_size)

    def loss(
        self, model: nn.Module, batch: ShardBatch, label_smoothing: float = 0.0
    ) -> tuple[torch.Tensor, int]:
        loss, tokens = self.inner.loss(model, batch, label_smoothing)
        return loss * batch.scale, tokens

    def evaluate(self, model: nn.Module) -> dict[str, Any]:
        return self.inner.evaluate(unwrap(model)) if self.rank == 0 else {}

    def snapshot(self, model: nn.Module) -> dict[str, Any]:
        return self.inner.snapshot(unwrap(model)) if self.rank == 0 else {}


def distribute(model: nn.Module, task: Task, world: World) -> tuple[nn.Module, Task]:
    """The model to train (DDP-wrapped) and this rank's task; both as given for one process."""
    if not world.distributed:
        return model, task
    device = next(model.parameters()).device
    ddp = DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        forward_sync_buffers=False,  # the buffers are fixed tables (sinusoids, ALiBi slopes)
    )
    return ddp, ShardedTask(task, world.rank, world.size)


def _reduce_device() -> torch.device:
    """Where a collective's tensors live: NCCL reduces CUDA tensors only."""
    on_gpu = dist.get_backend() == BACKENDS["cuda"]
    return torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")


def main_rank_events(events: Iterator[TrainEvent], world: World) -> Iterator[TrainEvent]:
    """The run's events on rank 0 only, each step's loss the mean over ranks (= the global
    batch's loss) and tokens/s summed. Every rank must drain it: a step is a collective."""
    for event in events:
        if isinstance(event, StepEvent) and world.distributed:
            totals = torch.tensor(
                [event.loss, event.tokens_per_s], dtype=torch.float64, device=_reduce_device()
            )
            dist.all_reduce(totals)  # sum over ranks
            loss, tokens_per_s = totals.tolist()
            event = dataclasses.replace(event, loss=loss / world.size, tokens_per_s=tokens_per_s)
        if world.is_main:
            yield event
