"""Background runs: the server-wide cap, the queue, stop, and freeing a run's memory."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from transformer_core.train.runs import BackgroundRun, RunSlots
from transformer_core.train.trainer import TrainConfig, prepare_run


def _run(slots: RunSlots, steps: int = 100_000, **kw) -> BackgroundRun:
    config = TrainConfig(task="reverse", steps=steps, batch_size=4, device="cpu", eval_every=0, **kw)
    model, task = prepare_run(config, "none", d_model=16, n_layers=1, n_heads=2, d_ff=32)
    task.eval_lengths, task.eval_samples = [3], 4
    return BackgroundRun(model, task, config, slots)


def _wait(predicate, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def test_runs_beyond_the_cap_queue_in_order() -> None:
    slots = RunSlots(max_running=2)
    runs = [_run(slots) for _ in range(4)]
    for r in runs:
        r.start()
    _wait(lambda: runs[0].status == "running" and runs[1].status == "running")
    _wait(lambda: slots.waiting == 2)
    assert runs[2].status == "queued" and runs[3].status == "queued"
    assert (runs[2].queue_position, runs[3].queue_position) == (1, 2)
    assert slots.running == 2
    runs[0].stop()
    _wait(lambda: runs[2].status == "running")
    assert runs[3].status == "queued" and runs[3].queue_position == 1
    for r in reversed(runs):  # the waiting one first, so it never gets a slot
        r.stop()
        r.join(10)
    assert all(not r.alive for r in runs) and slots.running == 0 and slots.waiting == 0
    assert runs[3].status == "stopped" and runs[3].model is None  # never ran, memory freed


def test_stop_takes_effect_within_a_second() -> None:
    run = _run(RunSlots(1)).start()
    _wait(lambda: run.step >= 3)
    t0 = time.perf_counter()
    run.stop()
    run.join(5)
    assert not run.alive and time.perf_counter() - t0 < 1.0
    assert run.status == "stopped" and run.step < 100_000


def test_finished_run_records_history_and_metrics() -> None:
    run = _run(RunSlots(1), steps=20, snapshot_every=10).start()
    run.join(60)
    assert run.status == "done" and run.steps == list(range(1, 21))
    assert len(run.losses) == len(run.lrs) == 20
    assert [s for s, _ in run.snapshots] == [1, 10, 20]
    assert set(run.snapshots[0][1]) >= {"cross", "encoder_self", "decoder_self", "source_tokens"}
    assert "exact_match@3" in run.evals[-1] and set(run.metrics) == {"exact_match", "token_accuracy"}


def test_a_dropped_owner_stops_its_run() -> None:
    class Owner:
        pass

    owner = Owner()
    run = _run(RunSlots(1)).start(owner=owner)
    _wait(lambda: run.step >= 1)
    del owner
    gc.collect()
    run.join(5)
    assert not run.alive and run.status == "stopped"


def test_a_failing_run_reports_and_frees_its_slot() -> None:
    slots = RunSlots(1)
    run = _run(slots, steps=5)

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    run.task.loss = broken  # type: ignore[method-assign]
    run.start()
    run.join(10)
    assert run.status == "failed" and "boom" in run.error and run.model is None
    assert slots.running == 0


def test_slot_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_running"):
        RunSlots(0)


def test_waiting_run_cancelled_before_it_starts() -> None:
    slots = RunSlots(1)
    first, second = _run(slots).start(), _run(slots).start()
    _wait(lambda: second.queue_position == 1)
    second.stop()
    second.join(5)
    assert second.status == "stopped" and not second.steps
    first.stop()
    first.join(5)
    assert threading.active_count() >= 1


def test_out_of_memory_stops_only_that_run_with_a_message() -> None:
    import torch

    slots = RunSlots(1)
    run = _run(slots, steps=5)

    def out_of_memory(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    run.task.loss = out_of_memory  # type: ignore[method-assign]
    run.start()
    run.join(10)
    assert run.status == "failed" and "ran out of memory" in run.error
    assert slots.running == 0
    other = _run(slots, steps=3).start()  # the server keeps serving
    other.join(30)
    assert other.status == "done"
