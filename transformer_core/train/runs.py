"""Training runs on a shared box: a run folder per run, and a cross-process queue.

Why: a run must never train inside the web server, must survive the tab (and the server)
closing, and the cap on concurrent runs must hold across every app process of the box.

- Each run lives in `<root>/<run id>/` (root = ATTENTION_LAB_RUNS_DIR): `request.json`
  (what to train), `corpus.txt` (an uploaded corpus, deleted when the run ends),
  `progress.jsonl` (one JSON object a line, written by the worker), `snapshots/*.safetensors`
  (attention of the probe input), `STOP` (present = stop requested), `worker.log`, and at
  the end `model.safetensors` + `checkpoint.json`: a normal checkpoint, loadable by its id.
- `RunQueue` keeps the runs' states in SQLite (`<root>/queue.sqlite3`, WAL, every state
  change in a `BEGIN IMMEDIATE` transaction): at most `max_running` runs are starting or
  running, the rest wait first-come first-served. Whoever changes the state (a page that
  submits or polls, a worker that ends) calls `dispatch()`, which claims the oldest waiting
  runs for free slots and spawns one worker process each (`python -m
  transformer_core.train.worker RUN_ID`). Workers heartbeat; a dead worker's run fails.
- `RunProgress` reads a run's progress incrementally (only the new lines each time).

Nothing is pickled: requests and progress are JSON, attention arrays are safetensors.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import secrets
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

from transformer_core.errors import CheckpointError, ConfigError, InputError
from transformer_core.io.checkpoint import META_FILE, is_run_id, runs_dir
from transformer_core.train.presets import LIMITS, model_shape
from transformer_core.train.tasks import attention_arrays
from transformer_core.train.trainer import (
    DoneEvent,
    EvalEvent,
    SnapshotEvent,
    StepEvent,
    TrainConfig,
    TrainEvent,
)

Status = Literal["queued", "starting", "running", "done", "stopped", "failed", "evicted"]
ACTIVE: tuple[str, ...] = ("queued", "starting", "running")
FINISHED: tuple[str, ...] = ("done", "stopped", "failed")
REQUEST_FILE, CORPUS_FILE, PROGRESS_FILE, STOP_FILE = "request.json", "corpus.txt", "progress.jsonl", "STOP"
SNAPSHOT_DIR, LOG_FILE, DB_FILE = "snapshots", "worker.log", "queue.sqlite3"
STALE_SECONDS = 30.0  # a worker silent this long is dead
MAX_CORPUS_CHARS = 5_000_000


class RunError(ValueError):
    """A run cannot be submitted or found; the message is meant for the user."""


def new_run_id() -> str:
    """`run-` + 32 hex characters (128 random bits): unguessable, so it can be the only handle."""
    return "run-" + secrets.token_hex(16)


def env_int(name: str, default: int, low: int = 1) -> int:
    """An integer setting from the environment; a bad value is a clear ConfigError."""
    raw = os.environ.get(name)
    try:
        value = int(raw) if raw not in (None, "") else default
    except ValueError:
        raise ConfigError(f"{name}: {raw!r} is not an integer") from None
    if value < low:
        raise ConfigError(f"{name}: must be >= {low}, got {value}")
    return value


def env_float(name: str, default: float, valid: Callable[[float], bool], expected: str) -> float:
    """A finite number setting from the environment that passes `valid` (else a clear
    ConfigError naming what was `expected`)."""
    raw = os.environ.get(name)
    try:
        value = float(raw) if raw not in (None, "") else default
    except ValueError:
        raise ConfigError(f"{name}: {raw!r} is not a number") from None
    if not (math.isfinite(value) and valid(value)):
        raise ConfigError(f"{name}: {expected}, got {value:g}")
    return value


def run_yield() -> float:
    """ATTENTION_LAB_RUN_YIELD, default 0.5: a run pauses between steps while tasks waited
    for a CPU more than this share of the time (worker.CpuPressure); 0 never pauses."""
    return env_float("ATTENTION_LAB_RUN_YIELD", 0.5, lambda v: 0 <= v <= 1, "a share between 0 and 1")


def default_max_runs() -> int:
    """ATTENTION_LAB_MAX_RUNS, else 4 on a CUDA box and 2 on CPU."""
    import torch  # only to ask whether a GPU exists; cheap once torch is loaded

    return env_int("ATTENTION_LAB_MAX_RUNS", 4 if torch.cuda.is_available() else 2)


def runs_max_bytes() -> int:
    """ATTENTION_LAB_RUNS_MAX_MB (may be fractional), default 1024 MB, in bytes."""
    return int(env_float("ATTENTION_LAB_RUNS_MAX_MB", 1024.0, lambda v: v > 0, "must be > 0") * 2**20)


def gpu_fraction(max_running: int) -> float:
    """Each run process's share of the GPU: ATTENTION_LAB_RUN_GPU_FRACTION, else 80% of
    the device split over the run slots (serving keeps the rest)."""
    return env_float(
        "ATTENTION_LAB_RUN_GPU_FRACTION", 0.8 / max_running, lambda v: 0 < v <= 1, "must be in (0, 1]"
    )


# ---------------------------------------------------------------- a run's request


@dataclass(frozen=True)
class RunRequest:
    """What a worker trains: the TrainConfig fields, the positional scheme, the size preset
    and shape overrides, and a label for people ("my-reverse-rope 14:02")."""

    train: dict[str, Any]
    positions: str
    size: str = "small"
    shape: dict[str, int] = field(default_factory=dict)
    label: str = "run"

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


@dataclass(frozen=True)
class RunInfo:
    """A run's row in the queue. position: 1-based place among waiting runs, else None."""

    id: str
    label: str
    task: str
    status: Status
    created: float
    started: float | None
    finished: float | None
    pid: int | None
    error: str | None
    position: int | None

    @property
    def finished_ok(self) -> bool:
        return self.status in ("done", "stopped")

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


def check_submission(request: RunRequest, corpus: str | None) -> None:
    """What every run queue (on disk, Redis) checks before it accepts a run: the shared
    box's LIMITS and the corpus size."""
    request.validate()
    if corpus is not None and len(corpus) > MAX_CORPUS_CHARS:
        raise InputError(f"corpus: at most {MAX_CORPUS_CHARS:,} characters, got {len(corpus):,}")


def run_folder(root: Path, run_id: str) -> Path:
    """`root/<run id>`; anything but a run id is a RunError (never a path out of root)."""
    if not is_run_id(run_id):
        raise RunError(f"{run_id!r} is not a run id")
    return root / run_id


# ---------------------------------------------------------------- the queue

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    label TEXT NOT NULL,
    task TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    heartbeat REAL,
    host TEXT,
    pid INTEGER,
    error TEXT
)
"""


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with this pid exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class RunQueue:
    """The runs of one runs folder, shared by every process that opens it.

    max_running: runs starting or running at once; max_bytes: disk budget of the run
    folders (finished runs are evicted oldest first); max_seconds: wall-clock bound of one
    run (the worker stops it and saves); spawn: False only in tests that drive workers
    themselves.
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        max_running: int | None = None,
        max_bytes: int | None = None,
        max_seconds: int | None = None,
        spawn: bool = True,
    ) -> None:
        self.root = Path(root) if root is not None else runs_dir()
        self.max_running = max_running if max_running is not None else default_max_runs()
        self.max_bytes = max_bytes if max_bytes is not None else runs_max_bytes()
        self.max_seconds = (
            max_seconds if max_seconds is not None else env_int("ATTENTION_LAB_RUN_MAX_SECONDS", 3600)
        )
        if self.max_running < 1:
            raise ConfigError(f"max_running: must be >= 1, got {self.max_running}")
        self.spawn = spawn
        self.root.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)

    # -------------------------------------------------- plumbing

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.root / DB_FILE, timeout=30, isolation_level=None)
        db.row_factory = sqlite3.Row
        try:
            yield db
        finally:
            db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """An exclusive write transaction: two processes never both see a free slot."""
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def folder(self, run_id: str) -> Path:
        return run_folder(self.root, run_id)

    # -------------------------------------------------- the page's side

    def submit(self, request: RunRequest, corpus: str | None = None) -> str:
        """Store the request, queue it, and start it when a slot is free. Returns the run id."""
        check_submission(request, corpus)
        self.enforce_disk_budget()
        if self.disk_bytes() > self.max_bytes:
            raise RunError("the runs folder is full of runs still training; try again when one ends")
        run_id = new_run_id()
        folder = self.folder(run_id)
        folder.mkdir()
        (folder / REQUEST_FILE).write_text(request.to_json(), encoding="utf-8")
        if corpus is not None:
            (folder / CORPUS_FILE).write_text(corpus, encoding="utf-8")
        with self._transaction() as db:
            db.execute(
                "INSERT INTO runs (id, label, task, status, created) VALUES (?, ?, ?, 'queued', ?)",
                (run_id, request.label, request.train_config().task, time.time()),
            )
        self.dispatch()
        return run_id

    def info(self, run_id: str) -> RunInfo | None:
        """The run's state, or None for an id this runs folder never had."""
        if not is_run_id(run_id):
            return None
        with self._connect() as db:
            row = db.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                return None
            position = None
            if row["status"] == "queued":
                position = db.execute(
                    "SELECT COUNT(*) FROM runs WHERE status = 'queued' AND seq <= ?", (row["seq"],)
                ).fetchone()[0]
        return RunInfo(
            row["id"], row["label"], row["task"], row["status"], row["created"], row["started"],
            row["finished"], row["pid"], row["error"], position,
        )  # fmt: skip

    def counts(self) -> tuple[int, int]:
        """(runs starting or running, runs waiting) across the whole box."""
        with self._connect() as db:
            rows = dict(db.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
        return rows.get("starting", 0) + rows.get("running", 0), rows.get("queued", 0)

    def stop(self, run_id: str) -> None:
        """A waiting run is cancelled at once; a running one ends after its current step
        (its worker watches for the STOP file) and is saved."""
        folder = self.folder(run_id)
        with self._transaction() as db:
            cancelled = db.execute(
                "UPDATE runs SET status = 'stopped', finished = ? WHERE id = ? AND status = 'queued'",
                (time.time(), run_id),
            ).rowcount
        if not cancelled and folder.is_dir():
            (folder / STOP_FILE).touch()

    def dispatch(self) -> list[str]:
        """Fail runs whose worker died, then claim waiting runs for free slots (oldest
        first) and spawn a worker for each. Safe to call from any process, any time."""
        now, host = time.time(), socket.gethostname()
        with self._transaction() as db:
            for row in db.execute(
                "SELECT id, status, started, heartbeat, host, pid FROM runs "
                "WHERE status IN ('starting', 'running')"
            ).fetchall():
                last = row["heartbeat"] or row["started"] or now
                dead = row["host"] == host and row["pid"] is not None and not pid_alive(row["pid"])
                if dead or now - last > STALE_SECONDS:
                    db.execute(
                        "UPDATE runs SET status = 'failed', finished = ?, error = ? WHERE id = ?",
                        (now, "the run's worker process ended unexpectedly", row["id"]),
                    )
            busy = db.execute("SELECT COUNT(*) FROM runs WHERE status IN ('starting', 'running')").fetchone()[
                0
            ]
            free = max(0, self.max_running - busy)
            claimed = [
                r[0]
                for r in db.execute(
                    "SELECT id FROM runs WHERE status = 'queued' ORDER BY seq LIMIT ?", (free,)
                ).fetchall()
            ]
            for run_id in claimed:
                db.execute(
                    "UPDATE runs SET status = 'starting', started = ?, heartbeat = ?, host = ? WHERE id = ?",
                    (now, now, host, run_id),
                )
        if self.spawn:
            for run_id in claimed:
                self._spawn(run_id)
        return claimed

    def _spawn(self, run_id: str) -> None:
        """A fresh interpreter (spawned, never forked), in its own session so it outlives
        the process that started it; a daemon thread reaps it when it exits."""
        folder = self.folder(run_id)
        env = {  # the worker's own queue object (it dispatches the next run) gets our settings
            **os.environ,
            "ATTENTION_LAB_RUNS_DIR": str(self.root),
            "ATTENTION_LAB_MAX_RUNS": str(self.max_running),
            "ATTENTION_LAB_RUNS_MAX_MB": repr(self.max_bytes / 2**20),
            "ATTENTION_LAB_RUN_MAX_SECONDS": str(self.max_seconds),
        }
        with open(folder / LOG_FILE, "ab") as log:
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "transformer_core.train.worker", run_id],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as e:
                self.finish(run_id, "failed", f"could not start a worker process: {e}")
                return
        with self._transaction() as db:
            db.execute("UPDATE runs SET pid = ? WHERE id = ? AND pid IS NULL", (proc.pid, run_id))
        threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()

    # -------------------------------------------------- the worker's side

    def mark_running(self, run_id: str, pid: int) -> bool:
        """Called by the worker as it starts; False when the run was not claimed for it."""
        with self._transaction() as db:
            return bool(
                db.execute(
                    "UPDATE runs SET status = 'running', pid = ?, host = ?, heartbeat = ? "
                    "WHERE id = ? AND status = 'starting'",
                    (pid, socket.gethostname(), time.time(), run_id),
                ).rowcount
            )

    def heartbeat(self, run_id: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE runs SET heartbeat = ? WHERE id = ?", (time.time(), run_id))

    def finish(self, run_id: str, status: Status, error: str | None = None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE runs SET status = ?, error = ?, finished = ? WHERE id = ?",
                (status, error, time.time(), run_id),
            )

    def stop_requested(self, run_id: str) -> bool:
        return (self.folder(run_id) / STOP_FILE).exists()

    # -------------------------------------------------- disk

    def disk_bytes(self) -> int:
        """Bytes used by all run folders."""
        return sum(_folder_bytes(p) for p in self.root.iterdir() if p.is_dir() and is_run_id(p.name))

    def enforce_disk_budget(self) -> list[str]:
        """Delete finished runs, oldest first, until the run folders fit max_bytes; their
        rows stay with status 'evicted' (so their ids say "expired", not "unknown")."""
        sizes = {p.name: _folder_bytes(p) for p in self.root.iterdir() if p.is_dir() and is_run_id(p.name)}
        total = sum(sizes.values())
        if total <= self.max_bytes:
            return []
        with self._connect() as db:
            oldest = [
                r[0]
                for r in db.execute(
                    "SELECT id FROM runs WHERE status IN ('done', 'stopped', 'failed') ORDER BY seq"
                ).fetchall()
            ]
        evicted = []
        for run_id in oldest:
            if total <= self.max_bytes:
                break
            shutil.rmtree(self.root / run_id, ignore_errors=True)
            total -= sizes.get(run_id, 0)
            evicted.append(run_id)
        if evicted:
            note = f"deleted to keep the runs folder under {self.max_bytes / 2**20:g} MB"
            with self._transaction() as db:
                db.executemany(
                    "UPDATE runs SET status = 'evicted', error = ? WHERE id = ?", [(note, i) for i in evicted]
                )
        return evicted

    def has_checkpoint(self, run_id: str) -> bool:
        return (self.folder(run_id) / META_FILE).is_file()


# ---------------------------------------------------------------- progress files


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
                 "lr": event.lr, "tokens_per_s": event.tokens_per_s, "elapsed": event.elapsed},
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
    call (and reports whether there were any). steps/losses/lrs are parallel lists."""

    folder: Path
    offset: int = 0
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
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
