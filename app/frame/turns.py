"""Page runs in turns: one app process runs at most ATTENTION_LAB_PAGE_RUNS whole page runs
at once, and a follower's run that opens the lecturer's new view takes a turn of the
followers' own (attention_lab.lecture.classroom.run_turns chooses the pool).

Runs started together share one interpreter: each then takes about as long as all of them
together, the longest runs (a /gpt page sampling 200 characters) longest of all, and
switching between them costs CPU of its own. In turns, a run waits for the ones before it
and then runs as fast as it would alone. A run that takes long (a model's first load) stops
counting against its pool after a while, so it holds the others back that long at most. A
fragment's rerun (a follower's poll, a save button) is not a page run and takes no turn.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections import deque
from collections.abc import Iterator


class Turns:
    """A pool of turns, process-wide: `size` runs at once, in the order they came. A run that
    has held its turn for hold_seconds no longer counts against the pool (the next one goes
    in beside it), and a run waits at most wait_seconds before it goes on without a turn."""

    def __init__(self, size: int, wait_seconds: float, hold_seconds: float) -> None:
        self.size, self.wait_seconds, self.hold_seconds = size, wait_seconds, hold_seconds
        self._lock = threading.Lock()
        self._waiting: deque[threading.Event] = deque()  # each waiting run's own bell, in order
        self._holding: dict[threading.Event, float] = {}  # each run inside -> when it went in

    def _admit(self, now: float) -> float:
        """(Under the lock) let the first waiters in while fewer than `size` runs inside are
        fresh; returns the seconds until the next run inside stops counting."""
        fresh = [went for went in self._holding.values() if now - went < self.hold_seconds]
        while self._waiting and len(fresh) < self.size:
            bell = self._waiting.popleft()
            self._holding[bell] = now
            fresh.append(now)
            bell.set()
        return min(fresh, default=now) + self.hold_seconds - now if fresh else self.hold_seconds

    @contextlib.contextmanager
    def turn(self) -> Iterator[bool]:
        """Hold a turn while the block runs; yields whether it got one (False: it waited
        wait_seconds and runs alongside the others)."""
        bell, deadline = threading.Event(), time.monotonic() + self.wait_seconds
        with self._lock:
            self._waiting.append(bell)
        while not bell.is_set():
            now = time.monotonic()
            with self._lock:
                if now >= deadline:
                    if not bell.is_set():
                        self._waiting.remove(bell)
                    break
                pause = min(self._admit(now), deadline - now)
            bell.wait(max(pause, 0.001))
        took = bell.is_set()
        try:
            yield took
        finally:
            if took:
                with self._lock:
                    del self._holding[bell]
                    self._admit(time.monotonic())


# A lecturer's change sets every follower on this process to run its page at once; two at a
# time, the first followers see the change soon and other users' pages keep their pace.
FOLLOWERS = Turns(size=2, wait_seconds=30.0, hold_seconds=30.0)
PAGE_WAIT_SECONDS = 30.0  # a page run waits at most this for its turn
PAGE_HOLD_SECONDS = 2.0  # a page run this long (a model's first load) lets the next one in


@functools.cache
def pages(size: int) -> Turns | None:
    """The page runs' pool of this process, `size` at once (ATTENTION_LAB_PAGE_RUNS); None for 0."""
    return Turns(size=size, wait_seconds=PAGE_WAIT_SECONDS, hold_seconds=PAGE_HOLD_SECONDS) if size else None


@contextlib.contextmanager
def page_turn(pool: Turns | None) -> Iterator[None]:
    """Around the router's whole run: a turn of `pool` while it runs (None: straight on)."""
    if pool is None:
        yield
        return
    with pool.turn():
        yield
