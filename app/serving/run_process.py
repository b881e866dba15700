"""The process one training run lives in: `python -m attention_lab.serving.run_process RUN_ID`.

Why a process of its own: training never slows or crashes the web server, a run outlives
the browser tab, and on CUDA its memory is capped per process and returned to the device
when the process exits. `SQLiteRunStore.dispatch` spawns it (an RQ work horse calls
`execute` too); it trains, writes progress into the run folder, saves the model there as a
normal checkpoint, and hands its slot on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import torch

import attention_lab.serving.settings as settings
from attention_lab.serving import logs
from attention_lab.serving.ids import RunError
from attention_lab.serving.priority import CpuPressure, prepare_run_process
from attention_lab.serving.progress import CORPUS_FILE, ProgressWriter, note_gpu_memory
from attention_lab.serving.request import RunRequest
from attention_lab.serving.sqlite_store import SQLiteRunStore
from attention_lab.serving.store import RunControl
from transformer_core.device import limit_process_memory, memory_in_use, release_memory, resolve_device
from transformer_core.errors import CheckpointError, ConfigError, InputError
from transformer_core.generation import generate
from transformer_core.interp.fill import fill_masks, show_masks
from transformer_core.interp.profiles import profile_heads, save_profiles
from transformer_core.io import load_checkpoint, save_checkpoint
from transformer_core.train import DoneEvent, LanguageModelTask, StepEvent, TrainConfig, Trainer, prepare_run
from transformer_core.train.mlm import MaskedLanguageModelTask

WATCH_EVERY, HEARTBEAT_EVERY = 0.05, 2.0
SAMPLE_CHARS = 200
_LOG = logging.getLogger("attention_lab.serving.run_process")  # not __name__: "__main__" under python -m


class Watcher(threading.Thread):
    """Sets `stop` when the run's STOP file appears or its wall-clock budget is spent, and
    heartbeats the store so a dead run process is noticed. Polls every 50 ms: a stop takes
    effect after the current step."""

    def __init__(self, queue: RunControl, run_id: str, stop: threading.Event) -> None:
        super().__init__(name=f"watch-{run_id[:12]}", daemon=True)
        self.queue, self.run_id, self.stop = queue, run_id, stop
        self.deadline = time.monotonic() + queue.max_seconds
        self.timed_out = False
        self.finished = threading.Event()
        self.device: torch.device | None = None  # once known: its memory is noted with each heartbeat

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
                used = memory_in_use(self.device) if self.device is not None else None
                if used is not None:
                    with contextlib.suppress(OSError):  # /admin's figure, never the run's failure
                        note_gpu_memory(self.queue.folder(self.run_id), used)
                last_beat = time.monotonic()


def lm_sample(model: torch.nn.Module, task: LanguageModelTask) -> str:
    """The probe continued for SAMPLE_CHARS characters at temperature 0.8 (seed 0)."""
    probe = task.probe_text()
    steps = generate(model, task.tokenizer.encode(probe), SAMPLE_CHARS, temperature=0.8, seed=0)
    return probe + task.tokenizer.decode([s.token for s in steps])


def mlm_sample(model: torch.nn.Module, task: MaskedLanguageModelTask) -> str:
    """The probe with its blanks as [MASK], and as the model fills them."""
    probe = task.tokenizer.keep_known(task.probe)
    return f"{show_masks(probe)} → {fill_masks(model, task.tokenizer, probe).filled}"


SAMPLES = {LanguageModelTask: lm_sample, MaskedLanguageModelTask: mlm_sample}  # by task type


def execute(queue: RunControl, run_id: str) -> str:
    """Train the claimed run `run_id` to its end and save it; returns its final status.
    Every failure becomes a failed run with a message, never an exception."""
    folder = queue.folder(run_id)
    if not queue.mark_running(run_id, os.getpid()):
        _LOG.warning("run %s was not claimed for this process: not trained here", run_id)
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
        device = watcher.device = resolve_device(config.device)
        limit_process_memory(device, settings.gpu_fraction(queue.max_running))
        corpus = folder / CORPUS_FILE
        text = corpus.read_text(encoding="utf-8") if corpus.is_file() else None
        model, task = prepare_run(config, request.positions, text=text, size=request.size, **request.shape)
        writer = ProgressWriter(folder)
        pressure = CpuPressure(settings.run_yield())
        writer.write({"kind": "start", "pid": os.getpid(), "total": config.steps, "device": str(device)})
        _LOG.info("run %s started: %s, %d steps on %s", run_id, config.task, config.steps, device)
        done: DoneEvent | None = None
        for event in Trainer(model, task, config, stop=stop).run():
            writer.record(event)
            napped = pressure.pause(stop) if isinstance(event, StepEvent) else 0.0
            if napped:
                writer.write({"kind": "paused", "seconds": round(pressure.paused, 2)}, now=False)
            if isinstance(event, DoneEvent):
                done = event
        assert done is not None
        if type(task) in SAMPLES and not done.cancelled:
            model.eval()
            writer.write({"kind": "sample", "text": SAMPLES[type(task)](model, task)})
        metrics = {**done.metrics, "steps": done.step, "train_seconds": round(done.elapsed, 1)}
        if pressure.paused:  # included in train_seconds: naps while the server was busy
            metrics["paused_seconds"] = round(pressure.paused, 1)
        save_checkpoint(
            folder,
            model,
            task.tokenizer,
            train_args=_train_args(request, config, corpus=text is not None),
            metrics=metrics,
            command=f"trained on the /train page (run {run_id})",
            label=request.label,
        )
        keep_profiles(folder)
        status = "stopped" if done.cancelled else "done"
        error = "stopped at the run's wall-clock limit" if watcher.timed_out else None
        queue.finish(run_id, status, error)
        why = f" ({error})" if error else ""
        _LOG.info("run %s %s: %d steps in %.1f s%s", run_id, status, done.step, done.elapsed, why)
        return status
    except torch.cuda.OutOfMemoryError:
        share = settings.gpu_fraction(queue.max_running)
        message = f"the GPU ran out of memory (this run may use {share:.0%} of it): try a smaller model"
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
    _LOG.warning("run %s failed: %s", run_id, message[:300])
    return "failed"


def keep_profiles(folder: Path) -> None:
    """A trained GPT's heads across held-out windows (/heads section 11), written beside its
    weights as the run's last, bounded step (PROFILE_WINDOWS windows: seconds), so no page
    computes them; a model with no held-out text keeps none, and /heads says why."""
    ckpt = load_checkpoint(folder)
    if ckpt.config.arch != "gpt":
        return
    try:
        save_profiles(profile_heads(ckpt), folder)
    except ConfigError as e:  # no held-out text on this machine
        _LOG.info("run %s keeps no head profiles: %s", folder.name, e)


def _train_args(request: RunRequest, config: TrainConfig, *, corpus: bool) -> dict[str, Any]:
    """What the checkpoint records of how it was trained (an uploaded corpus lies beside the weights)."""
    return {
        **config.to_dict(),
        **({"corpus": CORPUS_FILE} if corpus else {}),
        "positions": request.positions,
        "size": request.size,
        **request.shape,
    }


def main(argv: list[str] | None = None) -> int:
    """Entry point of a spawned run process: a low priority (serving comes first), few
    threads, the run, then the disk budget and the next waiting run."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m attention_lab.serving.run_process RUN_ID", file=sys.stderr)
        return 2
    logs.process_logging()
    prepare_run_process()
    queue = SQLiteRunStore()
    try:
        status = execute(queue, args[0])
        print(f"{args[0]}: {status}", flush=True)
    finally:
        queue.enforce_disk_budget()
        queue.dispatch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
