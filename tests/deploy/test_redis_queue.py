"""The Redis run queue for real: Debian's redis-server on a free loopback port (append-only
persistence in a temp folder), two `python -m transformer_core worker` processes, and two
RedisRunQueue objects with their own local folders standing for two app replicas on two
hosts. Covers the cap (= workers), queueing, stop across replicas, a killed worker, a Redis
restart, checkpoints opening by id anywhere, and a worker refusing foreign jobs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch
from redis import Redis
from rq.serializers import JSONSerializer

from tests.deploy.test_serve import free_port, process_tree
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.train import RunRequest
from transformer_core.train.redis_queue import ALIVE_SECONDS, RedisRunQueue, rq_queue

REDIS_SERVER = "/usr/bin/redis-server"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RedisServer:
    port: int
    folder: Path
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        wait(lambda: self._pong(), timeout=20)

    def _pong(self) -> bool:
        try:
            return bool(Redis(port=self.port, socket_connect_timeout=0.5).ping())
        except Exception:
            return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None


@dataclass
class Workers:
    url: str
    log_dir: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self, n: int) -> None:
        env = {**os.environ, "ATTENTION_LAB_RUN_THREADS": "1", "OMP_NUM_THREADS": "1"}
        for i in range(n):
            log = open(self.log_dir / f"worker-{len(self.procs)}-{i}.log", "w")  # noqa: SIM115
            self.procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "transformer_core",
                        "worker",
                        "--device",
                        "cpu",
                        "--redis",
                        self.url,
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
            )
        wait(lambda: self.count() >= len([p for p in self.procs if p.poll() is None]), timeout=60)

    def count(self) -> int:
        from rq import Worker

        redis = Redis.from_url(self.url)
        return Worker.count(connection=redis, queue=rq_queue(redis))

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                for pid in process_tree(p.pid):
                    with_suppress_kill(pid, signal.SIGKILL)
            p.wait(timeout=20)


def with_suppress_kill(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def wait(predicate: Callable[[], bool], timeout: float = 60.0, every: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(every)


def request(steps: int = 20_000, label: str = "redis run") -> RunRequest:
    train = dict(task="reverse", steps=steps, batch_size=4, device="cpu", eval_every=0, snapshot_every=50)
    return RunRequest(train=train, positions="none", size="tiny", label=label)


def status(queue: RedisRunQueue, run_id: str) -> str:
    info = queue.info(run_id)
    assert info is not None
    return info.status


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[RedisServer, Workers, RedisRunQueue, RedisRunQueue]]:
    server = RedisServer(free_port(), tmp_path / "redis")
    server.folder.mkdir()
    server.start()
    workers = Workers(server.url, tmp_path)
    replica_a = RedisRunQueue(server.url, tmp_path / "replica-a")
    replica_b = RedisRunQueue(server.url, tmp_path / "replica-b")
    try:
        workers.start(2)
        yield server, workers, replica_a, replica_b
    finally:
        workers.stop()
        server.stop()


def test_two_workers_train_two_runs_the_third_queues_and_a_replica_stops_anothers_run(cluster) -> None:
    _, workers, a, b = cluster
    assert a.max_running == b.max_running == 2  # the cap is the number of workers
    ids = [a.submit(request(label=f"run {i}")) for i in range(3)]
    wait(lambda: [status(a, r) for r in ids[:2]] == ["running", "running"], timeout=60)
    assert status(b, ids[2]) == "queued" and b.info(ids[2]).position == 1
    assert b.counts() == (2, 1)
    # replica B sees replica A's run training: its progress lines reach B's own folder
    mirrored = b.folder(ids[0]) / "progress.jsonl"
    wait(
        lambda: (
            b.info(ids[0]) is not None and mirrored.is_file() and b'"kind": "step"' in mirrored.read_bytes()
        )
    )
    t0 = time.monotonic()
    b.stop(ids[0])
    wait(lambda: status(b, ids[0]) == "stopped", timeout=5)
    assert time.monotonic() - t0 < 1.0 + 0.5  # stop within 1 s (+ the test's polling)
    wait(lambda: status(a, ids[2]) == "running", timeout=30)  # the freed worker takes the queued run
    # the stopped run is saved and opens by its id on replica A (mirrored from Redis)
    assert a.has_checkpoint(ids[0])
    ckpt = load_checkpoint(str(a.folder(ids[0])))
    assert ckpt.meta["label"] == "run 0" and ckpt.model.config.d_model == 32
    for run_id in ids[1:]:
        a.stop(run_id)
    wait(lambda: all(status(a, r) == "stopped" for r in ids), timeout=10)
    assert a.counts() == (0, 0)
    assert workers.count() == 2


def test_a_queued_run_is_cancelled_at_once(cluster) -> None:
    _, _, a, b = cluster
    ids = [a.submit(request(label=f"run {i}")) for i in range(3)]
    wait(lambda: status(a, ids[2]) == "queued" and status(a, ids[1]) == "running", timeout=60)
    b.stop(ids[2])
    assert status(a, ids[2]) == "stopped" and a.counts() == (2, 0)
    for run_id in ids[:2]:
        a.stop(run_id)
    wait(lambda: all(status(a, r) == "stopped" for r in ids[:2]), timeout=10)
    assert not a.has_checkpoint(ids[2])  # it never trained


def test_a_killed_worker_fails_its_run_and_the_queue_goes_on(cluster) -> None:
    _, workers, a, b = cluster
    ids = [a.submit(request(label=f"run {i}")) for i in range(3)]
    wait(lambda: [status(a, r) for r in ids[:2]] == ["running", "running"], timeout=60)
    victim = a.info(ids[0]).pid  # the work horse training run 0
    owner = next(p for p in workers.procs if victim in process_tree(p.pid))
    for pid in process_tree(owner.pid):
        with_suppress_kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    wait(lambda: status(b, ids[0]) == "failed", timeout=10)
    failed_after = time.monotonic() - t0
    assert failed_after < 10 and ALIVE_SECONDS < 10
    assert "stopped answering" in b.info(ids[0]).error
    for run_id in ids[1:2]:
        a.stop(run_id)  # the surviving worker frees up ...
    wait(lambda: status(a, ids[2]) == "running", timeout=30)  # ... and takes the queued run
    a.stop(ids[2])
    wait(lambda: status(a, ids[2]) == "stopped", timeout=10)


def test_finished_runs_survive_a_redis_restart_and_open_anywhere(cluster, tmp_path: Path) -> None:
    server, _, a, _ = cluster
    run_id = a.submit(request(steps=30, label="short"))
    wait(lambda: status(a, run_id) == "done", timeout=60)
    server.stop()
    server.start()  # same port, same append-only file
    fresh = RedisRunQueue(server.url, tmp_path / "a-new-replica")  # nothing mirrored yet
    info = fresh.info(run_id)
    assert info is not None and info.status == "done" and info.label == "short"
    assert fresh.has_checkpoint(run_id)
    ckpt = load_checkpoint(str(fresh.folder(run_id)))
    original = load_checkpoint(str(a.folder(run_id)))
    for name, tensor in original.model.state_dict().items():
        assert torch.equal(tensor, ckpt.model.state_dict()[name])
    lines = (fresh.folder(run_id) / "progress.jsonl").read_text().splitlines()
    assert lines[-1].startswith('{"kind": "done"') and '"step": 30' in lines[-1]


def test_a_worker_runs_nothing_but_runs(cluster, tmp_path: Path) -> None:
    server, _, _, _ = cluster
    victim = tmp_path / "must-survive.txt"
    victim.write_text("still here")
    job = rq_queue(Redis.from_url(server.url)).enqueue("os.remove", str(victim))
    wait(lambda: job.get_status(refresh=True) in ("failed", "finished"), timeout=30)
    assert job.get_status() == "failed" and victim.read_text() == "still here"
    assert "only runs transformer_core.train.redis_worker.run_job" in (job.latest_result().exc_string or "")
    assert job.serializer is JSONSerializer or job.serializer.__name__ == "JSONSerializer"
