"""Page runs and page errors of every app process of a box, counted in its runs folder.

Why a file: deploy/serve.sh runs N app processes, and /admin (in any one of them) and the
metrics exporter (a process of its own) report the box's figures. Each app process adds
its page runs to `<runs dir>/pages.sqlite3` (WAL, no fsync per commit: ~0.1 ms a run) in
per-minute rows, so runs per minute over the last minutes and totals since the folder was
made are one query. Rows older than KEEP_MINUTES fold into one row (minute 0): the totals
only grow (Prometheus counters) while the file stays small. Each process also notes when
it last ran a page and the GPU memory it holds (None without a GPU).

A counter that cannot write (a full disk, a locked file) drops that count: counting never
fails a page.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from attention_lab.serving.priority import pid_alive
from transformer_core.device import memory_in_use

DB_FILE = "pages.sqlite3"
RATE_MINUTES = 5  # runs per minute are averaged over this many minutes, the current one included
KEEP_MINUTES = 24 * 60  # per-minute rows kept before they fold into the totals row
SEEN_SECONDS = 600  # an app process that ran no page this long is not listed
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS minutes (minute INTEGER PRIMARY KEY, runs INTEGER NOT NULL,"
    " errors INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS processes (host TEXT NOT NULL, pid INTEGER NOT NULL, seen REAL NOT NULL,"
    " gpu_bytes INTEGER, PRIMARY KEY (host, pid))",
)


@dataclass(frozen=True)
class AppProcess:
    """An app process that ran a page in the last SEEN_SECONDS: its GPU memory (None: no GPU)."""

    host: str
    pid: int
    seen: float
    gpu_bytes: int | None


@dataclass(frozen=True)
class PageFigures:
    """Page runs and errors since the runs folder was made, per minute over RATE_MINUTES,
    and the app processes seen lately."""

    runs_total: int
    errors_total: int
    runs_per_minute: float
    errors_per_minute: float
    processes: tuple[AppProcess, ...]


def process_gpu_bytes() -> int | None:
    """GPU memory this process holds, None when it never used a GPU (never initialises CUDA)."""
    return memory_in_use(torch.device("cuda")) if torch.cuda.is_initialized() else None


class PageCounter:
    """One process's handle on the box's page counts (thread-safe: one connection, a lock)."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.path = root / DB_FILE
        self._lock = threading.Lock()
        self._host = socket.gethostname()
        self._db = sqlite3.connect(self.path, timeout=2, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        for statement in _SCHEMA:
            self._db.execute(statement)

    def record(self, *, error: bool = False, now: float | None = None) -> None:
        """Count one page run of this process (and, with `error`, one page error)."""
        now = time.time() if now is None else now
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT INTO minutes VALUES (?, 1, ?) ON CONFLICT (minute) DO UPDATE "
                    "SET runs = runs + 1, errors = errors + excluded.errors",
                    (int(now // 60), int(error)),
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO processes VALUES (?, ?, ?, ?)",
                    (self._host, os.getpid(), now, process_gpu_bytes()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def figures(self, now: float | None = None) -> PageFigures:
        """The box's page figures (folding per-minute rows past KEEP_MINUTES into the totals)."""
        now = time.time() if now is None else now
        minute = int(now // 60)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._fold(minute - KEEP_MINUTES)
                runs, errors = self._db.execute("SELECT TOTAL(runs), TOTAL(errors) FROM minutes").fetchone()
                recent_runs, recent_errors = self._db.execute(
                    "SELECT TOTAL(runs), TOTAL(errors) FROM minutes WHERE minute > ?",
                    (minute - RATE_MINUTES,),
                ).fetchone()
                self._db.execute("DELETE FROM processes WHERE seen < ?", (now - SEEN_SECONDS,))
                rows = self._db.execute("SELECT * FROM processes ORDER BY host, pid").fetchall()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        processes = tuple(
            AppProcess(host, pid, seen, gpu)
            for host, pid, seen, gpu in rows
            if host != self._host or pid_alive(pid)  # a restarted app process's old row goes
        )
        return PageFigures(
            int(runs), int(errors), recent_runs / RATE_MINUTES, recent_errors / RATE_MINUTES, processes
        )

    def _fold(self, before: int) -> None:
        old_runs, old_errors = self._db.execute(
            "SELECT TOTAL(runs), TOTAL(errors) FROM minutes WHERE minute > 0 AND minute < ?", (before,)
        ).fetchone()
        if old_runs:
            self._db.execute("DELETE FROM minutes WHERE minute > 0 AND minute < ?", (before,))
            self._db.execute(
                "INSERT INTO minutes VALUES (0, ?, ?) ON CONFLICT (minute) DO UPDATE "
                "SET runs = runs + excluded.runs, errors = errors + excluded.errors",
                (int(old_runs), int(old_errors)),
            )

    def close(self) -> None:
        with self._lock:
            self._db.close()
