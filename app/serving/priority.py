"""Serving comes first: how a run process gives the CPU back to the pages.

A run process lowers its priority (niceness, also of its session's scheduling group),
uses few torch threads, and naps between steps while the box's CPUs are full
(`CpuPressure`). `pid_alive` is how a store tells a dead run process on this host.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import attention_lab.serving.settings as settings

_LOG = logging.getLogger(__name__)


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with this pid is running; a zombie (exited, not yet
    reaped by its parent) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class CpuPressure:
    """Serving comes first, for real: a run backs off while its steps keep tasks waiting for
    a CPU. Niceness only shrinks a run's share: page threads sleep and wake all the time, and
    a woken one still waited out a nice-19 run's time slice, so two such runs on 2 cores
    still cost 20 users a quarter of their page speed (benchmarks/bench_load.py).

    The signal is Linux's pressure stall figure (/proc/pressure/cpu: microseconds in which
    some task was runnable but not running) over the wall time of the run's last step. The
    run's own waiting counts too, on purpose: a run preempted by pages is the surest sign
    that the CPUs are full (taking it off let pages slow by +27-39% again, bench_load.py);
    the price is that runs outnumbering the cores (ATTENTION_LAB_MAX_RUNS x RUN_THREADS)
    nap for each other. After a step above `above` the run naps, each time twice as long
    (`shortest` up to `longest` seconds), and after a quiet step half as long, so on a
    saturated box it still moves, slowly, and on a quiet one it does not pause at all.
    Where the kernel has no such file, nothing pauses."""

    PATH = Path("/proc/pressure/cpu")

    def __init__(
        self,
        above: float,
        *,
        shortest: float = 0.02,
        longest: float = 1.0,
        path: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.above, self.shortest, self.longest = above, shortest, longest
        self.path, self.clock = path or self.PATH, clock
        self.nap = 0.0  # the next pause, seconds
        self.paused = 0.0  # seconds napped so far
        self.last = self._read() if above > 0 else None
        if self.last is None:
            self.above = 0.0  # no pressure figures here (or never pause): no more reads

    def _read(self) -> tuple[float, float] | None:
        """(now, seconds stalled so far), or None without pressure figures."""
        try:
            some = self.path.read_text().split("\n", 1)[0]  # "some avg10=… avg60=… avg300=… total=US"
            return self.clock(), int(some.rsplit("total=", 1)[1]) / 1e6
        except (OSError, ValueError, IndexError):
            return None

    def share(self) -> float:
        """Stalled share of the wall time since the last look (0 without figures)."""
        now = self._read()
        last, self.last = self.last, now
        if now is None or last is None or now[0] <= last[0]:
            return 0.0
        return (now[1] - last[1]) / (now[0] - last[0])

    def pause(self, stop: threading.Event) -> float:
        """Call after each step: nap if the step's share was above the limit; a stop ends the
        nap at once. Returns the seconds napped."""
        if self.above <= 0:
            return 0.0
        if self.share() > self.above:
            self.nap = min(self.longest, max(self.shortest, 2 * self.nap))
        else:
            self.nap = self.nap / 2 if self.nap / 2 >= self.shortest else 0.0
        if not self.nap or stop.is_set():
            return 0.0
        start = self.clock()
        stop.wait(self.nap)
        napped = self.clock() - start
        self.paused += napped
        self.last = self._read()  # the next share is the next step's alone
        return napped


AUTOGROUP = Path("/proc/self/autogroup")


def lower_priority() -> int:
    """Serving comes first: raise this run process's niceness by ATTENTION_LAB_RUN_NICE, and
    its session's. Why both: on Linux with autogroup scheduling each session shares the CPU
    equally with the others whatever the niceness of its processes, and a run starts in a
    session of its own, so a niced run still took as much CPU as a whole app process.
    Returns the niceness asked for."""
    nice = settings.run_nice()
    with contextlib.suppress(OSError):
        os.nice(nice)
    with contextlib.suppress(OSError):  # no autogroup (other kernels, other systems): nothing to do
        AUTOGROUP.write_text(f"{nice}\n")
    return nice


def prepare_run_process() -> None:
    """What every run process does first (spawned on one box, or an RQ work horse): a low
    priority and ATTENTION_LAB_RUN_THREADS threads (torch's and numpy's)."""
    import torch

    from transformer_core.device import set_cpu_threads

    nice = lower_priority()
    set_cpu_threads(settings.run_threads())
    _LOG.debug("run process %d: niceness +%d, %d torch threads", os.getpid(), nice, torch.get_num_threads())
