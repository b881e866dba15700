"""Runs on one box: a SQLite store shared by every app process, and run processes it spawns.

Why: a run must never train inside the web server, must survive the tab (and the server)
closing, and the cap on concurrent runs must hold across every app process of the box.

`SQLiteRunStore` keeps the runs' states in SQLite (`<runs dir>/queue.sqlite3`, WAL, every
state change in a `BEGIN IMMEDIATE` transaction): at most `max_running` runs are starting or
running, the rest wait first-come first-served. Whoever changes the state (a page that
submits or polls, a run process that ends) calls `dispatch()`, which claims the oldest
waiting runs for free slots and spawns one run process each (`python -m
serving.run_process RUN_ID`). Run processes heartbeat; a dead one's run fails. The run
folders' layout is `serving.progress`'s.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import attention_lab.serving.settings as settings
from attention_lab.serving import logs
from attention_lab.serving.ids import RunError, is_run_id, new_run_id, run_folder
from attention_lab.serving.priority import pid_alive
from attention_lab.serving.progress import CORPUS_FILE, LOG_FILE, STOP_FILE, folder_bytes, runs_bytes
from attention_lab.serving.quota import PersonUsage, hold_to_limits
from attention_lab.serving.request import REQUEST_FILE, RunRequest, check_submission
from attention_lab.serving.store import ACTIVE, RunInfo, Status
from transformer_core.errors import ConfigError
from transformer_core.io import META_FILE

DB_FILE = "queue.sqlite3"
STALE_SECONDS = 30.0  # a run process silent this long is dead
_LOG = logging.getLogger(__name__)


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
    error TEXT,
    owner TEXT NOT NULL DEFAULT ''
)
"""


class SQLiteRunStore:
    """The runs of one runs folder, shared by every process that opens it (a RunStore and a
    RunControl).

    max_running: runs starting or running at once; max_bytes: disk budget of the run
    folders (finished runs are evicted oldest first); max_seconds: wall-clock bound of one
    run (the run process stops it and saves); spawn: False only in tests that drive run processes
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
        self.root = Path(root) if root is not None else settings.runs_dir()
        self.max_running = max_running if max_running is not None else settings.max_runs()
        self.max_bytes = max_bytes if max_bytes is not None else settings.runs_max_bytes()
        self.max_seconds = max_seconds if max_seconds is not None else settings.run_max_seconds()
        if self.max_running < 1:
            raise ConfigError(f"max_running: must be >= 1, got {self.max_running}")
        self.spawn = spawn
        self.root.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)
            if "owner" not in {c["name"] for c in db.execute("PRAGMA table_info(runs)")}:
                db.execute("ALTER TABLE runs ADD COLUMN owner TEXT NOT NULL DEFAULT ''")  # an older queue

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
        """Store the request, queue it, and start it when a slot is free. Returns the run id.
        A request with an owner is held to that person's limits (serving.quota)."""
        check_submission(request, corpus)
        self.enforce_disk_budget()
        if self.disk_bytes() > self.max_bytes:
            _LOG.warning("run refused: the runs folder is over its %g MB budget", self.max_bytes / 2**20)
            raise RunError("the runs folder is full of runs still training; try again when one ends")
        run_id = new_run_id()
        folder = self.folder(run_id)
        folder.mkdir()
        (folder / REQUEST_FILE).write_text(request.to_json(), encoding="utf-8")
        if corpus is not None:
            (folder / CORPUS_FILE).write_text(corpus, encoding="utf-8")
        try:
            with self._transaction() as db:  # the limits checked where the run is added: one step
                usage = functools.partial(self._usage, db)
                hold_to_limits(usage, request.owner, uploading=corpus is not None)
                db.execute(
                    "INSERT INTO runs (id, label, task, status, created, owner) "
                    "VALUES (?, ?, ?, 'queued', ?, ?)",
                    (run_id, request.label, request.train_config().task, time.time(), request.owner),
                )
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        if run_id not in self.dispatch():  # a run claimed there said so itself
            waiting = self.info(run_id)
            place = waiting.position if waiting is not None else None
            _LOG.info("run %s waits: all %d slots are busy (place %s)", run_id, self.max_running, place)
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
        return _run_info(row, position)

    def overview(self, latest: int = 20) -> tuple[dict[str, int], list[RunInfo]]:
        """({status: runs}, the runs an admin sees): every waiting or training run, then the
        `latest` most recent others, newest first; one read of the database."""
        with self._connect() as db:
            counts = dict(db.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
            rows = db.execute(
                "SELECT * FROM runs WHERE status IN ('queued', 'starting', 'running') ORDER BY seq DESC"
            ).fetchall()
            rows += db.execute(
                "SELECT * FROM runs WHERE status NOT IN ('queued', 'starting', 'running') "
                "ORDER BY seq DESC LIMIT ?",
                (latest,),
            ).fetchall()
        waiting = sorted(r["seq"] for r in rows if r["status"] == "queued")
        return counts, [
            _run_info(r, waiting.index(r["seq"]) + 1 if r["status"] == "queued" else None) for r in rows
        ]

    def runs_of(self, owner: str, latest: int = 50) -> list[RunInfo]:
        """The `latest` runs `owner` started, newest first ("my runs"); none for owner ""."""
        if not owner:
            return []
        with self._connect() as db:
            rows = db.execute(
                "SELECT * FROM runs WHERE owner = ? ORDER BY seq DESC LIMIT ?", (owner, latest)
            ).fetchall()
            waiting = [r[0] for r in db.execute("SELECT seq FROM runs WHERE status = 'queued' ORDER BY seq")]
        return [_run_info(r, waiting.index(r["seq"]) + 1 if r["status"] == "queued" else None) for r in rows]

    def usage(self, owner: str) -> PersonUsage:
        """What `owner` holds now: runs waiting or training, kept runs with an uploaded
        corpus, and the bytes of their kept run folders."""
        with self._connect() as db:
            return self._usage(db, owner)

    def _usage(self, db: sqlite3.Connection, owner: str) -> PersonUsage:
        rows = db.execute("SELECT id, status FROM runs WHERE owner = ? AND status != 'evicted'", (owner,))
        rows = rows.fetchall()
        folders = [self.folder(r["id"]) for r in rows]
        return PersonUsage(
            active=sum(r["status"] in ACTIVE for r in rows),
            uploads=sum((f / CORPUS_FILE).is_file() for f in folders),
            bytes=sum(folder_bytes(f) for f in folders if f.is_dir()),
        )

    def counts(self) -> tuple[int, int]:
        """(runs starting or running, runs waiting) across the whole box."""
        with self._connect() as db:
            rows = dict(db.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
        return rows.get("starting", 0) + rows.get("running", 0), rows.get("queued", 0)

    def stop(self, run_id: str) -> None:
        """A waiting run is cancelled at once; a running one ends after its current step
        (its run process watches for the STOP file) and is saved."""
        folder = self.folder(run_id)
        with self._transaction() as db:
            cancelled = db.execute(
                "UPDATE runs SET status = 'stopped', finished = ? WHERE id = ? AND status = 'queued'",
                (time.time(), run_id),
            ).rowcount
        if cancelled:
            _LOG.info("run %s stopped while waiting", run_id)
        elif folder.is_dir():
            _LOG.info("run %s: stop asked for", run_id)
            (folder / STOP_FILE).touch()

    def dispatch(self) -> list[str]:
        """Fail runs whose run process died, then claim waiting runs for free slots (oldest
        first) and spawn a run process for each. Safe to call from any process, any time."""
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
                        (now, "the run's process ended unexpectedly", row["id"]),
                    )
                    why = f"its process {row['pid']} is gone" if dead else f"silent for {now - last:.0f} s"
                    _LOG.warning("run %s failed: %s", row["id"], why)
            busy = db.execute("SELECT COUNT(*) FROM runs WHERE status IN ('starting', 'running')").fetchone()[
                0
            ]
            free = max(0, self.max_running - busy)
            waiting = db.execute(
                "SELECT id, created FROM runs WHERE status = 'queued' ORDER BY seq LIMIT ?", (free,)
            ).fetchall()
            claimed = [r[0] for r in waiting]
            for run_id in claimed:
                db.execute(
                    "UPDATE runs SET status = 'starting', started = ?, heartbeat = ?, host = ? WHERE id = ?",
                    (now, now, host, run_id),
                )
        for run_id, created in waiting:
            _LOG.info(
                "run %s starts now: a slot is free (%d of %d busy) after %.1f s waiting",
                run_id, busy, self.max_running, now - created,
            )  # fmt: skip
            busy += 1
        if self.spawn:
            for run_id in claimed:
                self._spawn(run_id)
        return claimed

    def _spawn(self, run_id: str) -> None:
        """A fresh interpreter (spawned, never forked), in its own session so it outlives
        the process that started it; a daemon thread reaps it when it exits."""
        folder = self.folder(run_id)
        env = {  # the run process's own store (it dispatches the next run) gets our settings
            **os.environ,
            **logs.child_env(),
            "ATTENTION_LAB_RUNS_DIR": str(self.root),
            "ATTENTION_LAB_MAX_RUNS": str(self.max_running),
            "ATTENTION_LAB_RUNS_MAX_MB": repr(self.max_bytes / 2**20),
            "ATTENTION_LAB_RUN_MAX_SECONDS": str(self.max_seconds),
        }
        with open(folder / LOG_FILE, "ab") as log:
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "attention_lab.serving.run_process", run_id],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except OSError as e:
                _LOG.warning("run %s failed: could not start a run process (%s)", run_id, e)
                self.finish(run_id, "failed", f"could not start a run process: {e}")
                return
        with self._transaction() as db:
            db.execute("UPDATE runs SET pid = ? WHERE id = ? AND pid IS NULL", (proc.pid, run_id))
        threading.Thread(target=proc.wait, name=f"reap-{proc.pid}", daemon=True).start()

    # -------------------------------------------------- the run process's side (RunControl)

    def mark_running(self, run_id: str, pid: int) -> bool:
        """Called by the run process as it starts; False when the run was not claimed for it."""
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
        return runs_bytes(self.root)

    def enforce_disk_budget(self) -> list[str]:
        """Delete finished runs, oldest first, until the run folders fit max_bytes; their
        rows stay with status 'evicted' (so their ids say "expired", not "unknown")."""
        sizes = {p.name: folder_bytes(p) for p in self.root.iterdir() if p.is_dir() and is_run_id(p.name)}
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
            _LOG.info(
                "run %s evicted (folder %s deleted): the run folders hold %.1f MB, over the %g MB budget",
                run_id, self.root / run_id, total / 2**20, self.max_bytes / 2**20,
            )  # fmt: skip
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


def _run_info(row: sqlite3.Row, position: int | None) -> RunInfo:
    return RunInfo(
        row["id"], row["label"], row["task"], row["status"], row["created"], row["started"],
        row["finished"], row["pid"], row["error"], position, row["owner"],
    )  # fmt: skip
