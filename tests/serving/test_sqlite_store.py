"""Training runs out of the web process: run processes, the cross-process cap and FIFO
queue (the SQLite run store in the runs folder), stop, persistence by run id, disk budget,
failures, and how run processes give the CPU back."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from attention_lab.serving import priority, run_process
from attention_lab.serving.ids import new_run_id
from attention_lab.serving.progress import PROGRESS_FILE, RunProgress, folder_bytes, runs_bytes
from attention_lab.serving.request import RunRequest
from attention_lab.serving.settings import gpu_fraction, run_yield, runs_max_bytes
from attention_lab.serving.sqlite_store import SQLiteRunStore
from transformer_core.device import limit_process_memory
from transformer_core.errors import CheckpointError, ConfigError
from transformer_core.io.checkpoint import META_FILE, load_checkpoint
from transformer_core.models import BERT
from transformer_core.train.tasks import ReversalTask


@pytest.fixture
def runs_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "runs"
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(root))
    monkeypatch.setenv("ATTENTION_LAB_RUN_NICE", "0")
    return root


def request(steps: int = 20_000, **train: object) -> RunRequest:
    fields = dict(task="reverse", steps=steps, batch_size=4, device="cpu", eval_every=0, **train)
    return RunRequest(train=fields, positions="none", size="tiny", label="test run")


def wait(predicate, timeout: float = 60.0, every: float = 0.02) -> None:
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(every)


def process_gone(pid: int) -> bool:
    """Exited (a zombie not yet reaped by its parent counts as exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def status(queue: SQLiteRunStore, run_id: str) -> str:
    info = queue.info(run_id)
    assert info is not None
    return info.status


def stop_all(queue: SQLiteRunStore, ids: list[str]) -> None:
    for run_id in ids:
        queue.stop(run_id)
    for run_id in ids:
        wait(lambda r=run_id: status(queue, r) in ("done", "stopped", "failed"), timeout=30)


def test_a_run_trains_in_a_child_process_and_is_saved_under_its_id(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1)
    run_id = queue.submit(request(steps=20, snapshot_every=10))
    assert run_id.startswith("run-") and len(run_id) >= 4 + 16
    wait(lambda: status(queue, run_id) == "done", timeout=120)
    info = queue.info(run_id)
    assert info.pid is not None and info.pid != os.getpid()  # trained in a child process
    progress = RunProgress(queue.folder(run_id))
    assert progress.refresh() and progress.done and progress.steps == list(range(1, 21))
    start = json.loads((queue.folder(run_id) / PROGRESS_FILE).read_text().splitlines()[0])
    assert start["kind"] == "start" and start["pid"] == info.pid != os.getpid()
    assert [s["step"] for s in progress.snapshots] == [1, 10, 20]
    snap = progress.load_snapshot(2)
    assert snap["cross"].ndim == 4 and snap["source_tokens"][-1] == "<eos>"
    assert set(progress.metrics) >= {"exact_match", "token_accuracy"}
    assert "exact_match@15" in progress.evals[-1]
    assert not progress.refresh()  # nothing new: nothing to redraw
    ckpt = load_checkpoint(run_id)  # a run id is a CKPT, from the runs folder
    assert ckpt.name == run_id and ckpt.task == "reverse" and len(ckpt.meta["weights_sha256"]) == 64
    assert ckpt.metrics["steps"] == 20
    # a restart: a new queue object (a new app process) still lists it
    again = SQLiteRunStore(max_running=1)
    assert again.info(run_id).status == "done" and again.has_checkpoint(run_id)
    assert again.counts() == (0, 0)


def test_an_induction_run_writes_every_heads_detector_scores_to_its_progress(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1)
    train = dict(task="induction", steps=8, batch_size=4, device="cpu", eval_every=4, snapshot_every=4)
    run_id = queue.submit(RunRequest(train=train, positions="learned", size="tiny", label="induction run"))
    wait(lambda: status(queue, run_id) == "done", timeout=120)
    lines = [json.loads(s) for s in (queue.folder(run_id) / PROGRESS_FILE).read_text().splitlines()]
    evals = [r["metrics"] for r in lines if r["kind"] == "eval"] + [lines[-1]["metrics"]]
    assert [r["step"] for r in lines if r["kind"] == "eval"] == [1, 2, 4] and lines[-1]["kind"] == "done"
    for metrics in evals:  # tiny: 2 layers x 2 heads, scores in [0, 1]; both in-context losses
        for score in ("previous_token", "induction"):
            values = np.asarray(metrics[score])
            assert values.shape == (2, 2) and ((values >= 0) & (values <= 1)).all()
        assert metrics["loss_first_copy"] > 0 and metrics["loss_repeat"] > 0
    progress = RunProgress(queue.folder(run_id))  # what /train reads back
    assert progress.refresh() and [e["step"] for e in progress.evals] == [1, 2, 4, 8]
    assert np.asarray(progress.evals[-1]["induction"]).shape == (2, 2)
    snap = progress.load_snapshot(len(progress.snapshots) - 1)
    assert snap["self"].shape[:2] == (2, 2) and len(snap["source_tokens"]) == snap["self"].shape[-1]
    ckpt = load_checkpoint(run_id)  # a GPT checkpoint: /gpt and /heads open it by its run id
    assert ckpt.task == "lm" and not ckpt.config.mlp and ckpt.config.n_layers == 2


def test_a_masked_lm_run_fills_its_probe_and_opens_as_a_bert(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1)
    train = dict(
        task="mlm", steps=6, batch_size=4, device="cpu", eval_every=3, snapshot_every=3, block_size=32
    )
    run_id = queue.submit(RunRequest(train=train, positions="rope", size="tiny", label="bert run"))
    wait(lambda: status(queue, run_id) == "done", timeout=120)
    progress = RunProgress(queue.folder(run_id))
    assert progress.refresh() and 0 <= progress.evals[-1]["masked_accuracy"] <= 1
    assert progress.sample.startswith("The ret[MASK]rn statement → The ret")  # the probe, then as filled
    snap = progress.load_snapshot(len(progress.snapshots) - 1)
    assert snap["self"].shape[:2] == (2, 4) and len(snap["source_tokens"]) == snap["self"].shape[-1]
    ckpt = load_checkpoint(run_id)  # /bert opens it by its run id
    assert ckpt.task == "mlm" and isinstance(ckpt.model, BERT) and ckpt.metrics["chance_accuracy"] > 0.1


def test_stop_takes_effect_within_a_second_and_the_model_is_kept(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1)
    run_id = queue.submit(request())
    progress = RunProgress(queue.folder(run_id))
    wait(lambda: (progress.refresh(), progress.step >= 3)[1], timeout=120)
    t0 = time.perf_counter()
    queue.stop(run_id)
    wait(lambda: status(queue, run_id) == "stopped", timeout=5, every=0.01)
    assert time.perf_counter() - t0 < 1.0
    ckpt = load_checkpoint(run_id)
    assert 3 <= ckpt.metrics["steps"] < 20_000
    wait(lambda: process_gone(queue.info(run_id).pid), timeout=30)


def test_two_app_processes_share_the_cap_and_a_third_run_queues(runs_root: Path) -> None:
    first = SQLiteRunStore(max_running=2)
    a = first.submit(request())
    code = (
        "from attention_lab.serving.sqlite_store import SQLiteRunStore; "
        "from attention_lab.serving.request import RunRequest;"
        "r = RunRequest(train=dict(task='reverse', steps=20000, batch_size=4, device='cpu', eval_every=0),"
        " positions='none', size='tiny');"
        "print(SQLiteRunStore(max_running=2).submit(r))"
    )
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    b = other.stdout.strip().splitlines()[-1]  # submitted by another process
    second = SQLiteRunStore(max_running=2)  # a third queue object, as a third app process would have
    c = second.submit(request())
    d = first.submit(request())
    wait(lambda: status(first, a) == "running" and status(first, b) == "running", timeout=120)
    assert (second.info(c).status, second.info(c).position) == ("queued", 1)
    assert (first.info(d).status, first.info(d).position) == ("queued", 2)
    assert first.counts() == second.counts() == (2, 2)
    first.stop(a)
    wait(lambda: status(second, c) in ("starting", "running"), timeout=60)
    assert status(first, d) == "queued" and first.info(d).position == 1
    first.stop(d)  # a waiting run is cancelled at once, without ever starting
    assert status(first, d) == "stopped" and not first.has_checkpoint(d)
    stop_all(second, [b, c])
    assert first.counts() == (0, 0)
    for run_id in (a, b, c):  # every worker process has exited
        wait(lambda r=run_id: process_gone(first.info(r).pid), timeout=30)


def test_a_dead_worker_fails_its_run_and_frees_the_slot(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1)
    run_id = queue.submit(request())
    wait(lambda: status(queue, run_id) == "running", timeout=120)
    os.kill(queue.info(run_id).pid, signal.SIGKILL)
    wait(lambda: (queue.dispatch(), status(queue, run_id) == "failed")[1], timeout=30, every=0.2)
    assert "ended unexpectedly" in queue.info(run_id).error and queue.counts() == (0, 0)


def test_unknown_and_malformed_ids_are_clear_errors(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1)
    unknown = new_run_id()
    assert queue.info(unknown) is None and queue.info("../etc") is None
    with pytest.raises(CheckpointError, match="unknown or expired run"):
        load_checkpoint(unknown)
    with pytest.raises(CheckpointError, match="not a run id"):
        load_checkpoint("run-xyz")


def _claimed(queue: SQLiteRunStore, req: RunRequest) -> str:
    """A run submitted and claimed, for a worker executed in this process (spawn=False)."""
    run_id = queue.submit(req)
    assert queue.info(run_id).status == "starting"
    return run_id


def test_out_of_memory_fails_only_that_run_with_a_message(
    runs_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = SQLiteRunStore(max_running=1, spawn=False)

    def out_of_memory(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    with monkeypatch.context() as m:
        m.setattr(ReversalTask, "loss", out_of_memory)
        failing = _claimed(queue, request(steps=5))
        assert run_process.execute(queue, failing) == "failed"
    info = queue.info(failing)
    assert info.status == "failed" and "ran out of memory" in info.error and queue.counts() == (0, 0)
    ok = _claimed(queue, request(steps=3))  # the next run trains normally
    assert run_process.execute(queue, ok) == "done" and load_checkpoint(ok).metrics["steps"] == 3


def test_a_broken_request_fails_with_a_message(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1, spawn=False)
    run_id = _claimed(queue, request(steps=5))
    (queue.folder(run_id) / "request.json").write_text("{not json")
    assert run_process.execute(queue, run_id) == "failed"
    assert "request.json is unreadable" in queue.info(run_id).error


def test_disk_budget_evicts_the_oldest_finished_runs(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1, spawn=False)
    done = []
    for _ in range(2):
        run_id = _claimed(queue, request(steps=2))
        assert run_process.execute(queue, run_id) == "done"
        done.append(run_id)
    one_run = sum(p.stat().st_size for p in queue.folder(done[0]).rglob("*") if p.is_file())
    tight = SQLiteRunStore(max_running=1, spawn=False, max_bytes=int(one_run * 1.5))
    assert tight.enforce_disk_budget() == [done[0]]
    assert tight.info(done[0]).status == "evicted" and "runs folder" in tight.info(done[0]).error
    with pytest.raises(CheckpointError, match="unknown or expired"):
        load_checkpoint(done[0])
    assert load_checkpoint(done[1]).name == done[1]  # the newer one stays
    running = _claimed(tight, request(steps=2))  # active runs are never evicted
    tight.max_bytes = 1
    assert done[1] in tight.enforce_disk_budget() and queue.folder(running).is_dir()


def test_disk_use_counts_every_file_and_a_folder_cleared_meanwhile_as_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, refused = tmp_path / new_run_id(), tmp_path / new_run_id()
    (kept / "snapshots").mkdir(parents=True)
    (kept / "request.json").write_bytes(b"x" * 100)
    (kept / "snapshots" / "step-1.safetensors").write_bytes(b"y" * 1000)
    (refused / "request.json").parent.mkdir()
    (refused / "request.json").write_bytes(b"z" * 7)
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "not-a-run" / "big").write_bytes(b"w" * 5000)
    assert folder_bytes(kept) == 1100 and runs_bytes(tmp_path) == 1107
    # Another tab's refused submit removes its folder after it was listed, before it is walked.
    walk = os.walk

    def walk_after_clearing(top, *args, **kwargs):
        if Path(top) == refused:
            shutil.rmtree(refused)
        return walk(top, *args, **kwargs)

    monkeypatch.setattr(os, "walk", walk_after_clearing)
    assert runs_bytes(tmp_path) == 1100
    assert folder_bytes(tmp_path / "never-made") == 0


def test_corrupt_run_files_are_reported_not_fatal(runs_root: Path) -> None:
    queue = SQLiteRunStore(max_running=1, spawn=False)
    run_id = _claimed(queue, request(steps=2, snapshot_every=1))
    run_process.execute(queue, run_id)
    folder = queue.folder(run_id)
    with open(folder / PROGRESS_FILE, "a") as f:
        f.write("{broken line\n")
    progress = RunProgress(folder)
    assert progress.refresh() and progress.done and progress.steps == [1, 2]
    (folder / "snapshots" / "step-000001.safetensors").write_bytes(b"junk")
    with pytest.raises(CheckpointError, match="unreadable"):
        progress.load_snapshot(0)
    meta = json.loads((folder / META_FILE).read_text())
    meta["weights_sha256"] = "0" * 64
    (folder / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="checksum"):
        load_checkpoint(run_id)


def test_requests_are_bounded(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="steps"):
        request(steps=10**6).validate()
    big = dataclasses.replace(request(), shape={"d_model": 4096})
    with pytest.raises(ConfigError, match="d_model"):
        big.validate()
    with pytest.raises(ConfigError, match="max_running"):
        SQLiteRunStore(tmp_path / "runs", max_running=0)
    assert not (tmp_path / "runs").exists()


def test_gpu_memory_is_capped_per_run_process(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, d: calls.append((f, d)))
    assert not limit_process_memory(torch.device("cpu"), 0.5) and calls == []
    assert limit_process_memory(torch.device("cuda", 0), 0.2)
    assert calls == [(0.2, torch.device("cuda", 0))]
    assert gpu_fraction(4) == pytest.approx(0.2)
    monkeypatch.setenv("ATTENTION_LAB_RUN_GPU_FRACTION", "0.3")
    assert gpu_fraction(4) == 0.3
    monkeypatch.setenv("ATTENTION_LAB_RUN_GPU_FRACTION", "2")
    with pytest.raises(ConfigError, match="GPU_FRACTION"):
        gpu_fraction(4)
    monkeypatch.setenv("ATTENTION_LAB_RUNS_MAX_MB", "inf")  # once an OverflowError, not a message
    with pytest.raises(ConfigError, match="RUNS_MAX_MB"):
        runs_max_bytes()
    with pytest.raises(ConfigError, match="fraction"):
        limit_process_memory(torch.device("cpu"), 0.0)


def test_a_run_process_lowers_its_own_and_its_sessions_priority() -> None:
    """A run starts in a session of its own; with Linux's autogroup scheduling a session
    shares the CPU equally with each app process whatever its processes' niceness, so the
    run raises its session's niceness too (measured: a niced run still took pages +33%)."""
    code = (
        "import os; from pathlib import Path; from attention_lab.serving.priority import lower_priority; "
        "print(lower_priority(), os.nice(0)); "
        "g = Path('/proc/self/autogroup'); print(g.read_text().strip() if g.exists() else 'no autogroup')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "ATTENTION_LAB_RUN_NICE": "7"},
        start_new_session=True,  # as SQLiteRunStore starts a run: a session (an autogroup) of its own
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    assert out[0] == "7 7"  # the process itself
    if out[1] != "no autogroup":  # a kernel with autogroup scheduling: the session's share too
        assert out[1].endswith("nice 7"), out[1]


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def write_pressure(path: Path, stalled_us: int) -> None:
    path.write_text(
        f"some avg10=1.00 avg60=1.00 avg300=1.00 total={stalled_us}\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )


def test_cpu_pressure_is_the_stalled_share_of_wall_time(tmp_path: Path) -> None:
    """/proc/pressure/cpu's `some total` (µs in which a task waited for a CPU) over the wall
    time between two looks; a missing or garbled file reads as no pressure."""
    path, clock = tmp_path / "cpu", FakeClock()
    write_pressure(path, 5_000_000)
    pressure = priority.CpuPressure(0.5, path=path, clock=clock)
    clock.now += 2.0
    write_pressure(path, 6_500_000)  # 1.5 s stalled in 2 s
    assert pressure.share() == pytest.approx(0.75)
    clock.now += 1.0
    assert pressure.share() == 0.0  # nothing stalled since
    path.write_text("garbled")
    clock.now += 1.0
    assert pressure.share() == 0.0
    absent = priority.CpuPressure(0.5, path=tmp_path / "absent")
    assert absent.share() == 0.0 and absent.above == 0.0  # no figures: never looks again


def test_a_run_backs_off_while_its_steps_keep_tasks_waiting(tmp_path: Path) -> None:
    """After a step in which tasks waited for a CPU more than the limit, a run naps, twice as
    long each time up to `longest`; after quiet steps half as long, then not at all; a stop
    ends a nap at once and is counted as it was; 0 never pauses."""
    path, clock = tmp_path / "cpu", FakeClock()
    stalled = [0]
    write_pressure(path, 0)

    class Napping(threading.Event):  # a nap moves the wall clock; nobody waits meanwhile
        def wait(self, timeout: float | None = None) -> bool:
            clock.now += timeout or 0.0
            return self.is_set()

    def step(share: float, seconds: float = 0.05) -> None:
        clock.now += seconds
        stalled[0] += int(seconds * share * 1e6)
        write_pressure(path, stalled[0])

    stop = Napping()
    pressure = priority.CpuPressure(0.5, shortest=0.02, longest=0.1, path=path, clock=clock)
    naps = []
    for share in (0.8, 0.9, 0.7, 0.6, 0.9, 0.1, 0.0, 0.2, 0.0):
        step(share)
        naps.append(pressure.pause(stop))
    assert naps == pytest.approx([0.02, 0.04, 0.08, 0.1, 0.1, 0.05, 0.025, 0.0, 0.0])
    assert pressure.paused == pytest.approx(sum(naps))

    class StoppedMidNap(threading.Event):  # Stop pressed 10 ms into the nap
        def wait(self, timeout: float | None = None) -> bool:
            clock.now += 0.01
            self.set()
            return True

    step(0.9)
    assert pressure.pause(StoppedMidNap()) == pytest.approx(0.01)
    step(0.9)
    stop.set()
    assert pressure.pause(stop) == 0.0  # a stop already pressed: no nap at all

    never = priority.CpuPressure(0.0, path=path, clock=clock)
    step(0.9)
    assert never.pause(Napping()) == 0.0  # 0: never pauses, however full the box


def test_a_paused_run_records_its_pauses(runs_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """execute(): with the box full after every step, the run naps (20, 40, 80 ms), writes
    the running total to its progress for /train, and keeps it in the saved metrics."""
    monkeypatch.setenv("ATTENTION_LAB_RUN_YIELD", "0.5")
    monkeypatch.setattr(priority.CpuPressure, "_read", lambda self: (time.monotonic(), 0.0))  # any kernel
    monkeypatch.setattr(priority.CpuPressure, "share", lambda self: 0.9)
    queue = SQLiteRunStore(max_running=1, spawn=False)
    run_id = _claimed(queue, request(steps=3))
    assert run_process.execute(queue, run_id) == "done"
    progress = RunProgress(queue.folder(run_id))
    assert progress.refresh() and progress.paused == pytest.approx(0.14, abs=0.03)
    assert load_checkpoint(run_id).metrics["paused_seconds"] == pytest.approx(0.1, abs=0.05)


def test_run_yield_setting_is_a_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ATTENTION_LAB_RUN_YIELD", raising=False)
    assert run_yield() == 0.5
    monkeypatch.setenv("ATTENTION_LAB_RUN_YIELD", "0.25")
    assert run_yield() == 0.25
    for bad in ("lots", "1.5", "-0.1", "nan"):
        monkeypatch.setenv("ATTENTION_LAB_RUN_YIELD", bad)
        with pytest.raises(ConfigError, match="ATTENTION_LAB_RUN_YIELD"):
            run_yield()


def test_the_page_reads_how_long_a_run_paused(tmp_path: Path) -> None:
    lines = [{"kind": "start", "total": 10}, {"kind": "paused", "seconds": 3.5}]
    (tmp_path / PROGRESS_FILE).write_text("".join(json.dumps(line) + "\n" for line in lines))
    progress = RunProgress(tmp_path)
    assert progress.refresh() and progress.paused == 3.5 and progress.total == 10


def test_pid_alive_counts_a_zombie_as_dead() -> None:
    """A crashed run process not yet reaped (a zombie) has ended: its run must fail."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert priority.pid_alive(child.pid)
        child.kill()
        wait(lambda: Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z")
        assert not priority.pid_alive(child.pid)  # exited, not yet reaped
    finally:
        child.wait()
    assert not priority.pid_alive(child.pid)


def test_a_trained_gpt_keeps_its_head_profiles_beside_its_weights(runs_root: Path) -> None:
    """The run's job ends by profiling its heads over held-out windows (/heads section 11): the
    file belongs to these weights, so the page reads it instead of computing; a reversal keeps none."""
    from transformer_core.interp.profiles import PROFILE_WINDOWS, stored_profiles

    queue = SQLiteRunStore(max_running=1, spawn=False)
    train = dict(task="lm", steps=3, batch_size=2, device="cpu", eval_every=0)
    gpt = _claimed(queue, RunRequest(train=train, positions="rope", size="tiny"))
    assert run_process.execute(queue, gpt) == "done"
    ckpt = load_checkpoint(gpt)
    kept = stored_profiles(ckpt)
    assert kept is not None and kept.checkpoint_sha == ckpt.meta["weights_sha256"]
    assert kept.scores["previous_token"].shape == (PROFILE_WINDOWS, ckpt.config.n_layers, ckpt.config.n_heads)
    reversal = _claimed(queue, request(steps=2))
    assert run_process.execute(queue, reversal) == "done"
    assert not (queue.folder(reversal) / "profiles.json").exists()
