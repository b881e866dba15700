"""The process one training run lives in: `python -m transformer_core.train.worker RUN_ID`.

Why a process of its own: training never slows or crashes the web server, a run outlives
the browser tab, and on CUDA its memory is capped per process and returned to the device
when the process exits. `RunQueue.dispatch` spawns it; it trains, writes progress into the
run folder, saves the model there as a normal checkpoint, and hands its slot on.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

from transformer_core.device import limit_process_memory, release_memory, resolve_device
from transformer_core.errors import CheckpointError, ConfigError, InputError
from transformer_core.generation import generate
from transformer_core.io.checkpoint import save_checkpoint
from transformer_core.train.presets import prepare_run
from transformer_core.train.runs import (
    CORPUS_FILE,
    ProgressWriter,
    RunError,
    RunQueue,
    RunRequest,
    env_int,
    gpu_fraction,
    run_yield,
)
from transformer_core.train.tasks import LanguageModelTask
from transformer_core.train.trainer import DoneEvent, StepEvent, Trainer

WATCH_EVERY, HEARTBEAT_EVERY = 0.05, 2.0
SAMPLE_CHARS = 200


class Watcher(threading.Thread):
    """Sets `stop` when the run's STOP file appears or its wall-clock budget is spent, and
    heartbeats the queue so a dead worker is noticed. Polls every 50 ms: a stop takes
    effect after the current step."""

    def __init__(self, queue: RunQueue, run_id: str, stop: threading.Event) -> None:
        super().__init__(name=f"watch-{run_id[:12]}", daemon=True)
        self.queue, self.run_id, self.stop = queue, run_id, stop
        self.deadline = time.monotonic() + queue.max_seconds
        self.timed_out = False
        self.finished = threading.Event()

    def run(self) -> None:
        last_beat = 0.0
        while not self.finished.wait(WATCH_EVERY):
            if self.queue.stop_requested(self.run_id):
                self.stop.set()
            if time.monotonic() > self.deadline:
                self.timed_out = True
                self.stop.set()
            if time.monotonic() - last_beat > HEARTBEAT_EVERY:
                with contextlib.suppress(Exception):  # a busy database must not kill the run
                    self.queue.heartbeat(self.run_id)
                last_beat = time.monotonic()


def lm_sample(model: torch.nn.Module, task: LanguageModelTask) -> str:
    """The probe continued for SAMPLE_CHARS characters at temperature 0.8 (seed 0)."""
    probe = task.probe_text()
    steps = generate(model, task.tokenizer.encode(probe), SAMPLE_CHARS, temperature=0.8, seed=0)
    return probe + task.tokenizer.decode([s.token for s in steps])


def execute(queue: RunQueue, run_id: str) -> str:
    """Train the claimed run `run_id` to its end and save it; returns its final status.
    Every failure becomes a failed run with a message, never an exception."""
    folder = queue.folder(run_id)
    if not queue.mark_running(run_id, os.getpid()):
        return "not-claimed"
    stop = threading.Event()
    watcher = Watcher(queue, run_id, stop)
    watcher.start()
    writer: ProgressWriter | None = None
    device = torch.device("cpu")
    try:
        request = RunRequest.load(folder)
        request.validate()
        config = request.train_config()
        device = resolve_device(config.device)
        limit_process_memory(device, gpu_fraction(queue.max_running))
        corpus = folder / CORPUS_FILE
        text = corpus.read_text(encoding="utf-8") if corpus.is_file() else None
        model, task = prepare_run(config, request.positions, text=text, size=request.size, **request.shape)
        writer = ProgressWriter(folder)
        pressure = CpuPressure(run_yield())
        writer.write({"kind": "start", "pid": os.getpid(), "total": config.steps, "device": str(device)})
        done: DoneEvent | None = None
        for event in Trainer(model, task, config, stop=stop).run():
            writer.record(event)
            napped = pressure.pause(stop) if isinstance(event, StepEvent) else 0.0
            if napped:
                writer.write({"kind": "paused", "seconds": round(pressure.paused, 2)}, now=False)
            if isinstance(event, DoneEvent):
                done = event
        assert done is not None
        if isinstance(task, LanguageModelTask) and not done.cancelled:
            writer.write({"kind": "sample", "text": lm_sample(model, task)})
        metrics = {**done.metrics, "steps": done.step, "train_seconds": round(done.elapsed, 1)}
        if pressure.paused:  # included in train_seconds: naps while the server was busy
            metrics["paused_seconds"] = round(pressure.paused, 1)
        save_checkpoint(
            folder,
            model,
            task.tokenizer,
            train_args={
                **config.to_dict(),
                "positions": request.positions,
                "size": request.size,
                **request.shape,
            },
            metrics=metrics,
            command=f"trained on the /train page (run {run_id})",
            label=request.label,
        )
        status = "stopped" if done.cancelled else "done"
        error = "stopped at the run's wall-clock limit" if watcher.timed_out else None
        queue.finish(run_id, status, error)
        return status
    except torch.cuda.OutOfMemoryError:
        message = (
            f"the GPU ran out of memory (this run may use {gpu_fraction(queue.max_running):.0%} of it): "
            "try a smaller model or batch size"
        )
    except (ConfigError, InputError, CheckpointError, RunError, ValueError) as e:
        message = str(e)
    except Exception as e:  # a run's failure must reach its page as a message
        message = f"{type(e).__name__}: {e}"
        traceback.print_exc()
    finally:
        watcher.finished.set()
        if writer is not None:
            writer.close()
        (folder / CORPUS_FILE).unlink(missing_ok=True)
        release_memory(device)
    queue.finish(run_id, "failed", message)
    return "failed"


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
    nice = env_int("ATTENTION_LAB_RUN_NICE", 10, low=0)
    with contextlib.suppress(OSError):
        os.nice(nice)
    with contextlib.suppress(OSError):  # no autogroup (other kernels, other systems): nothing to do
        AUTOGROUP.write_text(f"{nice}\n")
    return nice


def main(argv: list[str] | None = None) -> int:
    """Entry point of a spawned worker: a low priority (serving comes first), few threads,
    the run, then the disk budget and the next waiting run."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m transformer_core.train.worker RUN_ID", file=sys.stderr)
        return 2
    lower_priority()
    torch.set_num_threads(env_int("ATTENTION_LAB_RUN_THREADS", 1))
    queue = RunQueue()
    try:
        status = execute(queue, args[0])
        print(f"{args[0]}: {status}", flush=True)
    finally:
        queue.enforce_disk_budget()
        queue.dispatch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
