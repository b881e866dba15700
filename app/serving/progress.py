"""A run's folder and its progress file: the one layout every store and run process shares.

Each run lives in `<runs dir>/<run id>/`: `request.json` (what to train), `corpus.txt` (an
uploaded corpus, deleted when the run ends), `progress.jsonl` (one JSON object a line,
written by the run process), `snapshots/*.safetensors` (attention of the probe input),
`STOP` (present = stop requested), `run.log`, and at the end `model.safetensors` +
`checkpoint.json`: a normal checkpoint, loadable by its id. The Redis store mirrors runs
into the same layout, so pages read progress with the same code on one box and on many.

Nothing is pickled: requests and progress are JSON, attention arrays are safetensors.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

from attention_lab.serving.ids import is_run_id
from transformer_core.errors import CheckpointError
from transformer_core.train import (
    DoneEvent,
    EvalEvent,
    SnapshotEvent,
    StepEvent,
    TrainEvent,
    attention_arrays,
)

CORPUS_FILE, PROGRESS_FILE, STOP_FILE = "corpus.txt", "progress.jsonl", "STOP"
SNAPSHOT_DIR, LOG_FILE = "snapshots", "run.log"
GPU_FILE = "gpu-memory.txt"  # bytes of GPU memory the run process holds (CUDA only), kept fresh
SUMMARY_TAIL = 16_384  # bytes read from the end of progress.jsonl for a run's latest step


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under `folder`. A file or folder removed while this counts (another
    tab's refused run is cleared at the same moment) counts as nothing: os.walk skips folders
    it can no longer list, and a file gone before its stat adds 0."""
    total = 0
    for parent, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(parent, name)).st_size
    return total


def runs_bytes(root: Path) -> int:
    """Bytes used by every run folder under the runs folder `root` (what its budget bounds)."""
    if not root.is_dir():
        return 0
    return sum(folder_bytes(p) for p in root.iterdir() if p.is_dir() and is_run_id(p.name))


def note_gpu_memory(folder: Path, used: int) -> None:
    """The run process's GPU memory in bytes, replaced atomically (a reader never sees half)."""
    part = folder / (GPU_FILE + ".part")
    part.write_text(str(int(used)), encoding="ascii")
    part.replace(folder / GPU_FILE)


@dataclass(frozen=True)
class ProgressSummary:
    """What an overview shows of a run without reading all its progress: its latest step,
    the steps asked for, its device and the GPU memory its process holds (None: none noted)."""

    step: int = 0
    total: int = 0
    device: str | None = None
    gpu_bytes: int | None = None


def summary(folder: Path) -> ProgressSummary:
    """A run's ProgressSummary from the first line and the last SUMMARY_TAIL bytes of its
    progress.jsonl and from GPU_FILE: cheap for any number of steps."""
    path, start, step = folder / PROGRESS_FILE, {}, 0
    with contextlib.suppress(OSError, ValueError):
        with open(path, "rb") as f:
            start = json.loads(f.readline())
            f.seek(max(0, path.stat().st_size - SUMMARY_TAIL))
            tail = f.read(SUMMARY_TAIL)
        for line in reversed(tail.splitlines()):
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if record.get("kind") in ("step", "done"):
                    step = int(record["step"])
                    break
    gpu = None
    with contextlib.suppress(OSError, ValueError):
        gpu = int((folder / GPU_FILE).read_text(encoding="ascii"))
    if start.get("kind") != "start":
        start = {}
    return ProgressSummary(step, int(start.get("total", 0)), start.get("device"), gpu)


def _flatten(metrics: dict[str, Any]) -> dict[str, float]:
    """{'exact_match': {'3': 1.0}} -> {'exact_match@3': 1.0}; flat values pass through."""
    flat: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            flat.update({f"{key}@{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


class ProgressWriter:
    """The worker's side of progress.jsonl: step lines are buffered and written at most
    every `flush_every` seconds; evaluations, snapshots and the end are written at once."""

    def __init__(self, folder: Path, flush_every: float = 0.25) -> None:
        self.folder, self.flush_every = folder, flush_every
        (folder / SNAPSHOT_DIR).mkdir(exist_ok=True)
        self._file = open(folder / PROGRESS_FILE, "a", encoding="utf-8")  # noqa: SIM115
        self._pending: list[str] = []
        self._last = 0.0

    def write(self, record: dict[str, Any], *, now: bool = True) -> None:
        self._pending.append(json.dumps(record, ensure_ascii=False))
        if now or time.monotonic() - self._last >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            self._file.write("\n".join(self._pending) + "\n")
            self._file.flush()
            self._pending.clear()
        self._last = time.monotonic()

    def record(self, event: TrainEvent) -> None:
        if isinstance(event, StepEvent):
            self.write(
                {"kind": "step", "step": event.step, "total": event.total, "loss": event.loss,
                 "lr": event.lr, "tokens_per_s": event.tokens_per_s, "elapsed": event.elapsed,
                 "grad_norms": {k: round(v, 5) for k, v in event.grad_norms.items()}},
                now=False,
            )  # fmt: skip
        elif isinstance(event, EvalEvent):
            self.write({"kind": "eval", "step": event.step, "metrics": event.metrics})
        elif isinstance(event, SnapshotEvent):
            arrays = {
                k: np.ascontiguousarray(v, dtype=np.float32)
                for k, v in attention_arrays(event.attention).items()
            }
            name = f"step-{event.step:06d}.safetensors"
            save_file(arrays, str(self.folder / SNAPSHOT_DIR / name))
            rest = {k: v for k, v in event.attention.items() if k not in arrays}
            self.write({"kind": "snapshot", "step": event.step, "file": name, **rest})
        elif isinstance(event, DoneEvent):
            self.write(
                {"kind": "done", "step": event.step, "metrics": event.metrics, "cancelled": event.cancelled,
                 "elapsed": event.elapsed}
            )  # fmt: skip

    def close(self) -> None:
        self.flush()
        self._file.close()


@dataclass
class RunProgress:
    """The page's side of progress.jsonl: `refresh()` reads only lines added since the last
    call (and reports whether there were any). steps/losses/lrs/grad_norms are parallel lists."""

    folder: Path
    offset: int = 0
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    grad_norms: list[dict[str, float]] = field(default_factory=list)  # per block, before clipping
    total: int = 0
    tokens_per_s: float = 0.0
    elapsed: float = 0.0
    paused: float = 0.0  # seconds the run napped while the server was busy (worker.CpuPressure)
    evals: list[dict[str, float]] = field(default_factory=list)
    snapshots: list[dict[str, Any]] = field(default_factory=list)  # {"step", "file", tokens...}
    metrics: dict[str, Any] = field(default_factory=dict)
    sample: str | None = None
    done: bool = False
    version: int = 0  # bumped whenever new lines were read

    @property
    def step(self) -> int:
        return self.steps[-1] if self.steps else 0

    def refresh(self, max_bytes: int = 8_000_000) -> bool:
        path = self.folder / PROGRESS_FILE
        try:
            size = path.stat().st_size
        except OSError:
            return False
        if size <= self.offset:
            return False
        with open(path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read(min(size - self.offset, max_bytes))
        end = chunk.rfind(b"\n") + 1  # a half-written last line waits for the next call
        if not end:
            return False
        self.offset += end
        for line in chunk[:end].splitlines():
            with contextlib.suppress(ValueError):
                self._apply(json.loads(line))
        self.version += 1
        return True

    def _apply(self, record: dict[str, Any]) -> None:
        kind = record.get("kind")
        if kind == "step":
            self.steps.append(int(record["step"]))
            self.losses.append(float(record["loss"]))
            self.lrs.append(float(record["lr"]))
            self.grad_norms.append({str(k): float(v) for k, v in record.get("grad_norms", {}).items()})
            self.total = int(record["total"])
            self.tokens_per_s, self.elapsed = float(record["tokens_per_s"]), float(record["elapsed"])
        elif kind == "start":
            self.total = int(record.get("total", 0))
        elif kind == "paused":
            self.paused = float(record["seconds"])
        elif kind == "eval":
            self.evals.append({"step": record["step"], **_flatten(record["metrics"])})
        elif kind == "snapshot":
            self.snapshots.append(record)
        elif kind == "done":
            self.metrics = record.get("metrics") or {}
            if self.metrics:
                self.evals.append({"step": record["step"], **_flatten(self.metrics)})
            self.elapsed, self.done = float(record["elapsed"]), True
        elif kind == "sample":
            self.sample = str(record["text"])

    def load_snapshot(self, index: int) -> dict[str, Any]:
        """Snapshot `index`: its arrays (L, H, Tq, Tk) by kind, with its token lists."""
        meta = self.snapshots[index]
        name = Path(str(meta["file"])).name  # never a path out of the run folder
        try:
            arrays = load_file(str(self.folder / SNAPSHOT_DIR / name))
        except (OSError, ValueError, SafetensorError) as e:
            raise CheckpointError(f"snapshot at step {meta['step']} is unreadable ({e})") from None
        return {**{k: v for k, v in meta.items() if k not in ("kind", "file")}, **arrays}
