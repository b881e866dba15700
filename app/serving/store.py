"""The run store's interface: what a page, a script or a run process may ask of the runs,
whichever store holds them (SQLite on one box, Redis across hosts).

`RunStore` is the page's side (submit, watch, stop); `RunControl` is a run process's side
(claim, heartbeat, stop requests, finish). `sqlite_store.SQLiteRunStore` and
`redis_store.RedisRunStore` implement the first; the SQLite store and
`redis_worker.WorkerSide` the second.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from attention_lab.serving.quota import PersonUsage
from attention_lab.serving.request import RunRequest

Status = Literal["queued", "starting", "running", "done", "stopped", "failed", "evicted"]
STATUSES: tuple[Status, ...] = typing.get_args(Status)


def as_status(text: str) -> Status:
    """A status read back from a store (a database column, a Redis hash) as the Literal it is."""
    for status in STATUSES:
        if status == text:
            return status
    raise ValueError(f"not a run status: {text!r}")


ACTIVE: tuple[str, ...] = ("queued", "starting", "running")
FINISHED: tuple[str, ...] = ("done", "stopped", "failed")


@dataclass(frozen=True)
class RunInfo:
    """A run's row in the store. position: 1-based place among waiting runs, else None."""

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
    owner: str = ""  # RunRequest.owner: the person who started it ("" before sign-in recorded owners)

    @property
    def finished_ok(self) -> bool:
        return self.status in ("done", "stopped")

    @property
    def active(self) -> bool:
        return self.status in ACTIVE


class RunStore(Protocol):
    """The runs as pages see them. root: the local folder runs are read from (Redis mirrors
    the runs it shows there); max_running: trainings at once."""

    root: Path
    max_seconds: int

    @property
    def max_running(self) -> int: ...
    def folder(self, run_id: str) -> Path: ...
    def submit(self, request: RunRequest, corpus: str | None = None) -> str: ...
    def info(self, run_id: str) -> RunInfo | None: ...
    def counts(self) -> tuple[int, int]: ...
    def overview(self, latest: int) -> tuple[dict[str, int], list[RunInfo]]: ...
    def runs_of(self, owner: str, latest: int) -> list[RunInfo]: ...
    def usage(self, owner: str) -> PersonUsage: ...
    def stop(self, run_id: str) -> None: ...
    def dispatch(self) -> list[str]: ...
    def has_checkpoint(self, run_id: str) -> bool: ...
    def enforce_disk_budget(self) -> list[str]: ...


class RunControl(Protocol):
    """A run process's side of its store: `run_process.execute` needs only this."""

    max_seconds: int

    @property
    def max_running(self) -> int: ...
    def folder(self, run_id: str) -> Path: ...
    def mark_running(self, run_id: str, pid: int) -> bool: ...
    def heartbeat(self, run_id: str) -> None: ...
    def stop_requested(self, run_id: str) -> bool: ...
    def finish(self, run_id: str, status: Status, error: str | None = None) -> None: ...
