"""Training runs in background threads, with a global cap on how many run at once.

Used by the app's /train page: each browser session owns at most one `BackgroundRun`;
`RunSlots` (one per server) lets `max_running` runs train and queues the rest in order.
A run's progress is plain lists the page reads; nothing here knows about Streamlit.
"""

from __future__ import annotations

import atexit
import threading
import time
import traceback
import weakref
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from transformer_core.errors import ConfigError, InputError
from transformer_core.train.trainer import (
    DoneEvent,
    EvalEvent,
    SnapshotEvent,
    StepEvent,
    Task,
    TrainConfig,
    Trainer,
)

Status = Literal["queued", "running", "done", "stopped", "failed"]


class RunSlots:
    """At most `max_running` runs train at once; the others wait first-come first-served."""

    def __init__(self, max_running: int) -> None:
        if max_running < 1:
            raise ConfigError(f"max_running: must be >= 1, got {max_running}")
        self.max_running = max_running
        self._cond = threading.Condition()
        self._running: set[int] = set()
        self._waiting: list[int] = []

    def acquire(self, ticket: int, cancelled: threading.Event) -> bool:
        """Block until this ticket may run (True) or it was cancelled while waiting (False)."""
        with self._cond:
            self._waiting.append(ticket)
            try:
                while not (len(self._running) < self.max_running and self._waiting[0] == ticket):
                    if cancelled.is_set():
                        return False
                    self._cond.wait(timeout=0.2)
                self._running.add(ticket)
                return True
            finally:
                self._waiting.remove(ticket)
                self._cond.notify_all()

    def release(self, ticket: int) -> None:
        with self._cond:
            self._running.discard(ticket)
            self._cond.notify_all()

    def position(self, ticket: int) -> int | None:
        """1-based place in the queue, or None when not waiting."""
        with self._cond:
            return self._waiting.index(ticket) + 1 if ticket in self._waiting else None

    @property
    def running(self) -> int:
        with self._cond:
            return len(self._running)

    @property
    def waiting(self) -> int:
        with self._cond:
            return len(self._waiting)


_tickets = iter(range(1, 1 << 62))
_ticket_lock = threading.Lock()


def _next_ticket() -> int:
    with _ticket_lock:
        return next(_tickets)


@dataclass
class BackgroundRun:
    """One training run on a daemon thread. Read its fields from any thread; call
    `stop()` to end it after the current step (well under a second for small models)."""

    model: torch.nn.Module
    task: Task
    config: TrainConfig
    slots: RunSlots
    label: str = "run"
    status: Status = "queued"
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    tokens_per_s: float = 0.0
    elapsed: float = 0.0
    evals: list[dict[str, Any]] = field(default_factory=list)
    snapshots: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    started_at: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.ticket = _next_ticket()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, name=f"train-{self.ticket}", daemon=True)

    def start(self, owner: object | None = None) -> BackgroundRun:
        """Start the thread. When `owner` (e.g. a token kept in the user's session) is
        garbage-collected, the run stops: a closed browser session frees its run."""
        if owner is not None:
            weakref.finalize(owner, self._stop.set)
        atexit.register(_stop_at_exit, weakref.ref(self))
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def finished(self) -> bool:
        return self.status in ("done", "stopped", "failed")

    @property
    def queue_position(self) -> int | None:
        return self.slots.position(self.ticket)

    @property
    def step(self) -> int:
        return self.steps[-1] if self.steps else 0

    def _main(self) -> None:
        if not self.slots.acquire(self.ticket, self._stop):
            self.status = "stopped"
            self.model = None  # type: ignore[assignment]  # free memory at once
            return
        try:
            self.status = "running"
            self.started_at = time.time()
            for event in Trainer(self.model, self.task, self.config, stop=self._stop).run():
                self._record(event)
        except torch.cuda.OutOfMemoryError:
            self._fail("the GPU ran out of memory: try a smaller model or batch size")
        except (ConfigError, InputError, ValueError) as e:
            self._fail(str(e))
        except Exception as e:  # keep serving others whatever happens in one run
            self._fail(f"{type(e).__name__}: {e}")
            traceback.print_exc()
        finally:
            self.slots.release(self.ticket)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()

    def _fail(self, message: str) -> None:
        self.error, self.status = message, "failed"
        self.model = None  # type: ignore[assignment]

    def _record(self, event: object) -> None:
        if isinstance(event, StepEvent):
            self.steps.append(event.step)
            self.losses.append(event.loss)
            self.lrs.append(event.lr)
            self.tokens_per_s, self.elapsed = event.tokens_per_s, event.elapsed
        elif isinstance(event, EvalEvent):
            self.evals.append({"step": event.step, **_flatten(event.metrics)})
        elif isinstance(event, SnapshotEvent):
            self.snapshots.append((event.step, event.attention))
        elif isinstance(event, DoneEvent):
            self.metrics = event.metrics
            self.evals.append({"step": event.step, **_flatten(event.metrics)})
            self.elapsed = event.elapsed
            self.status = "stopped" if event.cancelled else "done"


def _stop_at_exit(ref: weakref.ref) -> None:
    """Stop and join a still-running run before the interpreter tears threads down
    (a thread killed inside torch's backward pass aborts the whole process)."""
    run = ref()
    if run is not None and run.alive:
        run.stop()
        run.join(timeout=10)


def _flatten(metrics: dict[str, Any]) -> dict[str, float]:
    """{'exact_match': {'3': 1.0}} -> {'exact_match@3': 1.0}; flat values pass through."""
    flat = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            flat.update({f"{key}@{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat
