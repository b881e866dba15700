"""The Redis run store for real: Debian's redis-server on a free loopback port (append-only
persistence in a temp folder), two `python -m transformer_core worker --device cpu`
processes, and two RedisRunStore objects with their own local folders standing for two app
replicas on two hosts; then two real app replicas behind nginx (deploy/serve.sh) driven by
Chromium. Covers the cap (= workers), queueing and cancelling, stop across replicas,
progress and snapshots through Redis, killed work horses and workers, a Redis restart,
checkpoints opening by id anywhere (CLI included), and a worker refusing foreign jobs.

The tests share one Redis and two workers (module scope) and run in file order; each one
leaves no run active."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
import torch
from playwright.sync_api import Browser, BrowserContext, expect
from redis import Redis
from rq import Worker
from rq.serializers import JSONSerializer

from attention_lab.frame.streamlit_dom import part
from attention_lab.frame.streamlit_private import STREAM
from attention_lab.serving import RunProgress, RunRequest, fetch_run, redis_worker
from attention_lab.serving.redis_store import ALIVE_SECONDS, RedisRunStore, rq_queue
from attention_lab.serving.redis_worker import RunWorker, work_root
from tests.support.browser import assert_no_exception, open_page, wait_for_app
from tests.support.redis_server import RedisServer, wait
from tests.support.serve import ROUTE, free_port, process_tree, start_serve, stop_serve, upstream_of
from transformer_core import cli
from transformer_core.io.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@dataclass
class Workers:
    """`python -m transformer_core worker` processes this test started (and only those)."""

    url: str
    log_dir: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    def start(self, n: int) -> None:
        env = {**os.environ, "ATTENTION_LAB_RUN_THREADS": "1", "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-m", "transformer_core", "worker", "--device", "cpu", "--redis", self.url]
        for _ in range(n):
            with open(self.log_dir / f"worker-{len(self.procs)}.log", "w") as log:
                self.procs.append(
                    subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
                )
        wait(lambda: self.live() == len(self.alive()), timeout=90)

    def alive(self) -> list[subprocess.Popen]:
        return [p for p in self.procs if p.poll() is None]

    def live(self) -> int:
        """Workers registered with RQ and not expired."""
        redis = Redis.from_url(self.url)
        return len(Worker.all(connection=redis, queue=rq_queue(redis)))

    def owner(self, pid: int) -> subprocess.Popen:
        """The worker whose work horse is `pid`."""
        return next(p for p in self.alive() if pid in process_tree(p.pid))

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                kill(process_tree(p.pid))
            p.wait(timeout=20)


@dataclass
class Cluster:
    server: RedisServer
    workers: Workers
    a: RedisRunStore  # replica A's view (its own local runs folder)
    b: RedisRunStore  # replica B's view


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("redis-queue")
    server = RedisServer(free_port(), tmp / "redis")
    server.folder.mkdir()
    server.start()
    workers = Workers(server.url, tmp)
    try:
        workers.start(2)
        yield Cluster(
            server,
            workers,
            RedisRunStore(server.url, tmp / "replica-a"),
            RedisRunStore(server.url, tmp / "replica-b"),
        )
    finally:
        workers.stop()
        server.stop()


def request(steps: int = 20_000, label: str = "redis run") -> RunRequest:
    """The smallest reversal model; long runs are stopped by the tests. Batches of 128: at 4 a
    20,000-step run ended within 70 s on a quick box, before a test that waits on a new worker
    saw its waiting run running (the most steps a run may ask for is 20,000)."""
    train = dict(task="reverse", steps=steps, batch_size=128, device="cpu", eval_every=0, snapshot_every=50)
    return RunRequest(train=train, positions="none", size="tiny", label=label)


def status(queue: RedisRunStore, run_id: str) -> str:
    info = queue.info(run_id)
    assert info is not None, run_id
    return info.status


def stop_all(queue: RedisRunStore, ids: list[str]) -> None:
    for run_id in ids:
        if queue.info(run_id).active:
            queue.stop(run_id)
    wait(lambda: not any(queue.info(r).active for r in ids), timeout=20)
    assert queue.counts() == (0, 0)


def test_two_workers_train_two_runs_the_rest_queue_and_replica_b_cancels_and_stops_as_runs(
    cluster: Cluster,
) -> None:
    a, b = cluster.a, cluster.b
    assert a.max_running == b.max_running == 2  # the cap is the number of workers
    ids = [a.submit(request(label=f"run {i}")) for i in range(4)]
    wait(lambda: [status(a, r) for r in ids[:2]] == ["running", "running"], timeout=60)
    assert [b.info(r).status for r in ids[2:]] == ["queued", "queued"]
    assert [b.info(r).position for r in ids[2:]] == [1, 2]
    assert b.counts() == (2, 2)

    b.stop(ids[3])  # a waiting run is cancelled at once, by any replica
    assert status(a, ids[3]) == "stopped" and a.counts() == (2, 1) and b.info(ids[2]).position == 1

    # replica B watches replica A's run: progress lines and a snapshot reach B's own folder
    watched = RunProgress(b.folder(ids[0]))

    def snapshot_arrived() -> bool:
        b.info(ids[0])  # a page's poll: mirrors what is new into B's folder
        watched.refresh()
        return len(watched.snapshots) >= 1

    wait(snapshot_arrived)
    assert watched.steps[0] == 1 and watched.total == 20_000 and watched.losses[0] > 0
    snapshot = watched.load_snapshot(0)
    tokens = len(snapshot["source_tokens"])
    assert snapshot["step"] == watched.snapshots[0]["step"] >= 1
    assert snapshot["encoder_self"].shape == (1, 2, tokens, tokens)  # the tiny model: 1 layer, 2 heads

    t0 = time.monotonic()
    b.stop(ids[0])
    wait(lambda: status(b, ids[0]) == "stopped", timeout=10, every=0.02)
    stopped_after = time.monotonic() - t0
    assert stopped_after < 1.0, f"stop took {stopped_after:.2f} s"  # saved and marked within 1 s
    wait(lambda: status(a, ids[2]) == "running", timeout=30)  # the freed worker takes the queued run

    # the stopped run is saved and opens by its id on replica A (mirrored from Redis)
    assert a.has_checkpoint(ids[0]) and not a.has_checkpoint(ids[3])  # the cancelled one never trained
    ckpt = load_checkpoint(str(a.folder(ids[0])))
    assert ckpt.meta["label"] == "run 0" and ckpt.model.config.d_model == 32
    watched.refresh()  # B's folder got the rest of the run when B read its status
    assert watched.done and ckpt.meta["metrics"]["steps"] == watched.step > 1
    stop_all(a, ids)
    assert [a.info(r).status for r in ids] == ["stopped"] * 4


def test_a_run_started_through_one_app_replica_is_watched_and_stopped_through_the_other(
    cluster: Cluster, browser: Browser, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "ATTENTION_LAB_DEVICE": "cpu",
        "ATTENTION_LAB_REDIS_URL": cluster.server.url,
        "ATTENTION_LAB_RUNS_DIR": str(tmp_path / "runs"),
    }
    served = start_serve(tmp_path, env)
    contexts: list[BrowserContext] = []
    try:
        by_replica: dict[str, str] = {}  # upstream -> a route cookie that nginx sends there
        for i in range(40):
            by_replica.setdefault(upstream_of(served.url, f"{ROUTE}=r{i}"), f"r{i}")
            if len(by_replica) == 2:
                break
        (up1, route1), (up2, route2) = by_replica.items()
        pages = []
        for route in (route1, route2):
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_cookies([{"name": ROUTE, "value": route, "url": served.url}])
            contexts.append(context)
            pages.append(context.new_page())
            pages[-1].set_default_timeout(60_000)
        first, second = pages

        open_page(first, served.url + "/train")
        first.locator(part("main")).get_by_role("button", name="Start").click()
        expect(first.locator(part("progress"))).to_contain_text("running", timeout=60_000)
        run_id = parse_qs(urlparse(first.url).query)["run"][0]
        assert re.fullmatch(r"run-[0-9a-f]{32}", run_id)

        open_page(second, f"{served.url}/train?run={run_id}")
        progress = second.locator(part("progress"))
        expect(progress).to_contain_text("running", timeout=30_000)
        expect(progress).to_contain_text("my-reverse-")  # the run's label, read from Redis
        second.locator(part("main")).get_by_role("button", name="Stop").click()
        expect(progress).to_contain_text("stopped", timeout=15_000)
        wait_for_app(second)
        expect(second.get_by_text(f"/reversal?checkpoint={run_id}")).to_be_visible()
        assert_no_exception(second)
        expect(first.locator(part("progress"))).to_contain_text("stopped", timeout=30_000)
        assert_no_exception(first)
        info = cluster.a.info(run_id)
        assert info.status == "stopped" and info.label.startswith("my-reverse-")

        # the run's link opens its trained model in the other replica's explorer
        open_page(second, f"{served.url}/reversal?checkpoint={run_id}&text=attention")
        main = second.locator(part("main"))
        steps = json.loads((cluster.a.folder(run_id) / "checkpoint.json").read_text())["metrics"]["steps"]
        expect(main).to_contain_text(f"trained for {steps} steps")
        expect(main.get_by_text("cannot be opened")).to_have_count(0)
        while contexts:
            contexts.pop().close()
        # each browser's websocket went to its own replica (nginx logs one as it closes)
        log = tmp_path / "logs" / "access.log"
        for route, upstream in ((route1, up1), (route2, up2)):
            pattern = re.compile(rf'"GET {STREAM} HTTP/1.1" 101 .*route={route} upstream=(\S+)')
            wait(lambda: bool(pattern.search(log.read_text())), timeout=30, every=0.2)  # noqa: B023
            assert set(pattern.findall(log.read_text())) == {upstream}, route
        assert up1 != up2
    finally:
        for context in contexts:
            context.close()
        stop_serve(served)


def test_a_worker_runs_nothing_but_runs(cluster: Cluster, tmp_path: Path) -> None:
    victim = tmp_path / "must-survive.txt"
    victim.write_text("still here")
    queue = rq_queue(Redis.from_url(cluster.server.url))
    job = queue.enqueue("os.remove", str(victim))
    wait(lambda: job.get_status(refresh=True) in ("failed", "finished"), timeout=30)
    assert job.get_status() == "failed" and victim.read_text() == "still here"
    assert "only runs attention_lab.serving.redis_worker.run_job" in (job.latest_result().exc_string or "")
    assert job.serializer is JSONSerializer
    raw = Redis.from_url(cluster.server.url).hget(job.key, "data")
    assert json.loads(zlib.decompress(raw))[0] == "os.remove"  # the job is (compressed) JSON, not a pickle


def test_the_worker_holds_the_bounds_whatever_a_replica_sent(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bounded = RedisRunStore(cluster.server.url, tmp_path / "replica", max_seconds=1)
    timed = bounded.submit(request(label="one second"))
    # a replica that skipped its own checks: the worker checks again what came through Redis
    monkeypatch.setattr(RunRequest, "validate", lambda self: None)
    monkeypatch.setattr("attention_lab.serving.request.MAX_CORPUS_CHARS", 10**9)
    too_long = cluster.a.submit(request(steps=10**6, label="too many steps"))
    lm = RunRequest(
        train=dict(task="lm", steps=10, batch_size=2, device="cpu"), positions="none", size="tiny"
    )
    too_big = cluster.a.submit(lm, corpus="ab" * 2_500_001)

    wait(lambda: not any(cluster.a.info(r).active for r in (timed, too_long, too_big)), timeout=60)
    info = cluster.a.info(timed)
    assert (info.status, info.error) == ("stopped", "stopped at the run's wall-clock limit")
    assert 1.0 <= info.finished - info.started < 10.0
    assert cluster.a.has_checkpoint(timed)  # a run stopped at its bound is saved like any other
    info = cluster.a.info(too_long)
    assert (info.status, info.error) == ("failed", "steps: must be in 1..20000, got 1000000")
    info = cluster.a.info(too_big)
    assert (info.status, info.error) == ("failed", "corpus: at most 5,000,000 characters, got 5,000,002")
    assert cluster.a.counts() == (0, 0)


def test_killed_work_horses_and_workers_fail_their_runs_and_the_queue_goes_on(cluster: Cluster) -> None:
    a, b, workers = cluster.a, cluster.b, cluster.workers
    ids = [a.submit(request(label=f"run {i}")) for i in range(3)]
    wait(lambda: [status(a, r) for r in ids[:2]] == ["running", "running"], timeout=60)

    horse = a.info(ids[0]).pid
    work_folders = work_root(workers.owner(horse).pid)
    assert [f.name.split("-")[1] for f in work_folders.iterdir()] == [ids[0].split("-")[1]]
    kill({horse})  # the work horse only (the OOM killer): its worker fails the run
    wait(lambda: status(b, ids[0]) == "failed", timeout=10)
    assert "ended unexpectedly (signal 9" in b.info(ids[0]).error, b.info(ids[0]).error
    assert not list(work_folders.glob(f"{ids[0]}-*"))  # and removes what the horse left
    wait(lambda: status(a, ids[2]) == "running", timeout=30)  # that worker goes on with the queue

    horse = a.info(ids[1]).pid  # now the whole worker of run 1, with its horse
    kill(process_tree(workers.owner(horse).pid))
    failed_after = wait(lambda: status(b, ids[1]) == "failed", timeout=10)
    assert failed_after < 10 and ALIVE_SECONDS < 10
    assert "stopped answering" in b.info(ids[1]).error
    assert status(a, ids[2]) == "running" and a.counts() == (1, 0)
    stop_all(a, ids)
    assert [a.info(r).status for r in ids] == ["failed", "failed", "stopped"]


def test_the_train_page_shows_a_killed_workers_run_failed_within_10_s_and_frees_its_slot(
    cluster: Cluster, browser: Browser, tmp_path: Path
) -> None:
    """Issue 27: after `kill -9` on a worker's process group the page still read "running" and
    "2 of 2 training slots busy, 1 waiting" for 20 s. Now the page polls every 2 s through the
    run's ALIVE_SECONDS, and a slot is a worker process beating every second."""
    a, workers = cluster.a, cluster.workers
    workers.start(2 - len(workers.alive()))
    wait(lambda: a.max_running == 2, timeout=30)
    ids = [a.submit(request(label=f"watched {i}")) for i in range(3)]  # two train, one waits
    wait(lambda: [status(a, r) for r in ids] == ["running", "running", "queued"], timeout=60)
    env = {
        **os.environ,
        "ATTENTION_LAB_DEVICE": "cpu",
        "ATTENTION_LAB_REDIS_URL": cluster.server.url,
        "ATTENTION_LAB_RUNS_DIR": str(tmp_path / "runs"),
    }
    served = start_serve(tmp_path, env)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        counts, listed = cluster.b.overview(20)  # the admin's figures, from any replica
        assert (counts["running"], counts["queued"]) == (2, 1)
        shown = {i.id: i.status for i in listed if i.id in ids}
        assert shown == dict(zip(ids, ["running", "running", "queued"], strict=True))
        page = context.new_page()
        page.set_default_timeout(60_000)
        open_page(page, f"{served.url}/train?run={ids[0]}")
        progress, main = page.locator(part("progress")), page.locator(part("main"))
        expect(progress).to_contain_text("running")
        expect(main).to_contain_text("2 of 2 training slots busy, 1 waiting")

        kill(process_tree(workers.owner(a.info(ids[0]).pid).pid))  # the worker and its work horse
        killed = time.monotonic()
        expect(progress).to_contain_text("failed", timeout=15_000)
        shown_after = time.monotonic() - killed
        expect(main).to_contain_text("stopped answering")
        expect(main).to_contain_text("1 of 1 training slots busy, 1 waiting", timeout=5_000)
        assert_no_exception(page)
        print(f"killed worker's run shown failed after {shown_after:.1f} s")
        assert shown_after < 10.0

        workers.start(1)  # a new worker takes the waiting run
        wait(lambda: status(a, ids[2]) == "running", timeout=60)
        open_page(page, f"{served.url}/train?run={ids[2]}")
        expect(progress).to_contain_text("running")
        expect(main).to_contain_text("2 of 2 training slots busy, 0 waiting")
    finally:
        context.close()
        stop_serve(served)
        stop_all(a, ids)
    assert [a.info(r).status for r in ids] == ["failed", "stopped", "stopped"]


def test_finished_runs_survive_a_redis_restart_and_open_by_id_anywhere(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server, a = cluster.server, cluster.a
    run_id = a.submit(request(steps=30, label="short"))
    wait(lambda: status(a, run_id) == "done", timeout=60)
    server.stop()
    server.start()  # same port, same append-only file

    fresh = RedisRunStore(server.url, tmp_path / "new-replica")  # a replica that never saw the run
    info = fresh.info(run_id)
    assert info is not None and (info.status, info.label) == ("done", "short")
    lines = (fresh.folder(run_id) / "progress.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["kind"] == "done" and json.loads(lines[-1])["step"] == 30

    # the id is a CKPT on the command line of a host with an empty runs folder
    monkeypatch.setenv("ATTENTION_LAB_REDIS_URL", server.url)
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path / "cli-host"))
    assert cli.main(["eval", run_id, "--lengths", "3", "--samples", "4", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["exact_match"]) == {"3"}
    fetch_run(run_id)
    by_id, original = load_checkpoint(run_id), load_checkpoint(str(a.folder(run_id)))
    for name, tensor in original.model.state_dict().items():
        assert torch.equal(tensor, by_id.model.state_dict()[name]), name

    again = a.submit(request(steps=20, label="after the restart"))  # the worker reconnected
    wait(lambda: status(a, again) == "done", timeout=60)


def test_a_worker_whose_rq_loop_ends_by_itself_serves_again(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RQ's loop also returns without a stop signal (a Redis timeout mid-job, an error it does
    not handle); the worker process then serves again as a fresh RQ worker instead of
    exiting as if stopped, which left the queue without a worker (issue 27's flaky restart)."""
    lives: list[str] = []

    def work(self: RunWorker, **kwargs: object) -> bool:
        lives.append(self.name)
        if len(lives) == 2:
            self.stop_signalled = True  # the second life ends with a SIGTERM
        return True

    monkeypatch.setattr(RunWorker, "work", work)
    monkeypatch.setattr(redis_worker, "RECONNECT_EVERY", 0.01)
    monkeypatch.setenv(redis_worker.DEVICE_ENV, "cpu")
    handlers = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    try:
        assert redis_worker.serve_worker(cluster.server.url, "cpu") == 0
    finally:
        signal.signal(signal.SIGTERM, handlers[0])
        signal.signal(signal.SIGINT, handlers[1])
        shutil.rmtree(work_root(os.getpid()), ignore_errors=True)
    assert len(lives) == 2 and lives[0] != lives[1]  # two RQ workers, one after the other


def test_the_worker_command_names_a_missing_or_unreachable_redis(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ATTENTION_LAB_REDIS_URL", raising=False)
    monkeypatch.setenv("ATTENTION_LAB_WORKER_DEVICE", "")  # restored after the test
    assert cli.main(["worker", "--device", "cpu"]) == 2
    assert "give --redis redis://host:port/db or set ATTENTION_LAB_REDIS_URL" in capsys.readouterr().err
    nobody = f"redis://127.0.0.1:{free_port()}/0"
    assert cli.main(["worker", "--device", "cpu", "--redis", nobody]) == 2
    assert f"cannot reach Redis at {nobody}" in capsys.readouterr().err
