"""The admin's figures of a box, computed in one place for the /admin page and the
Prometheus exporter (`serving.metrics`): the runs by status and the runs an admin sees
(label, steps, device, GPU memory of its process), the runs folder's disk use against its
budget, and the page runs and errors of every app process (`serving.page_stats`).

Owners: each run's `RunInfo.owner` (the signed-in e-mail, or a browser's digest).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import torch

import attention_lab.serving.settings as settings
from attention_lab.serving.page_stats import PageCounter, PageFigures
from attention_lab.serving.progress import ProgressSummary, runs_bytes, summary
from attention_lab.serving.store import RunInfo, RunStore, Status

STATUSES: tuple[str, ...] = get_args(Status)
LATEST = 20  # finished runs listed besides every waiting and training one


@dataclass(frozen=True)
class RunRow:
    """One run as /admin lists it: the store's row and what its progress says."""

    info: RunInfo
    progress: ProgressSummary


@dataclass(frozen=True)
class Figures:
    """Everything /admin shows and /metrics exports, read at one moment."""

    counts: dict[str, int]  # every status, 0 included
    runs: tuple[RunRow, ...]
    max_running: int
    disk_bytes: int
    disk_budget_bytes: int
    gpu: bool  # whether this host has a CUDA GPU (else GPU memory is "no GPU")
    pages: PageFigures


def collect(store: RunStore, counter: PageCounter, latest: int = LATEST) -> Figures:
    """The box's figures now, from its run store, runs folder and page counter."""
    counts, infos = store.overview(latest)
    return Figures(
        counts={s: counts.get(s, 0) for s in STATUSES},
        runs=tuple(RunRow(i, summary(store.folder(i.id))) for i in infos),
        max_running=store.max_running,
        disk_bytes=runs_bytes(Path(store.root)),
        disk_budget_bytes=settings.runs_max_bytes(),
        gpu=torch.cuda.is_available(),
        pages=counter.figures(),
    )
