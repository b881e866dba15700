"""The worker's side of the Redis run queue: `python -m transformer_core worker`.

An RQ worker takes one run at a time (RQ forks a work horse per job, so a run's memory,
GPU memory included, goes back when it ends; the worker imports torch and the trainer once,
so a horse starts in milliseconds). The horse runs `run_job`: the run's request comes from
Redis into a local work folder, `run_process.execute` trains it exactly as on one box, and a
publisher thread uploads its progress lines and snapshots as they appear, refreshes the
run's `alive` key and fails other runs whose worker went silent; at the end the checkpoint
files go to Redis too. A worker performs no job function but `run_job`, and no callbacks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from redis import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rq import Worker
from rq.job import Job
from rq.serializers import JSONSerializer

import attention_lab.serving.settings as settings
from attention_lab.serving import logs
from attention_lab.serving.ids import RunError, is_run_id
from attention_lab.serving.priority import pid_alive, prepare_run_process
from attention_lab.serving.progress import CORPUS_FILE, PROGRESS_FILE, SNAPSHOT_DIR
from attention_lab.serving.redis_store import (
    ALIVE_SECONDS,
    BEAT_EVERY,
    MAX_FILE_BYTES,
    MAX_REQUEST_BYTES,
    PUBLISH_EVERY,
    RUN_JOB,
    WORKER_TTL,
    WORKERS_SET,
    _key,
    _update_if,
    beat,
    connect,
    fail_run,
    reap_all,
    rq_queue,
)
from attention_lab.serving.request import MAX_CORPUS_CHARS, REQUEST_FILE, RunRequest
from attention_lab.serving.store import Status
from transformer_core.device import resolve_device_before_fork
from transformer_core.errors import ConfigError
from transformer_core.io import META_FILE, WEIGHTS_FILE

DEVICE_ENV = "ATTENTION_LAB_WORKER_DEVICE"  # the worker's resolved device, for its work horses
RECONNECT_EVERY = 2.0  # seconds between pings while Redis is away
_LOG = logging.getLogger(__name__)


class WorkerSide:
    """What run_process.execute needs (a RunControl), for one run claimed from Redis: the run
    trains in a local work folder, and a publisher thread uploads its progress lines and
    snapshots every PUBLISH_EVERY seconds (refreshing `alive` as it goes)."""

    max_running = 1  # one run per worker process: its GPU share is ATTENTION_LAB_RUN_GPU_FRACTION or 80%

    def __init__(self, redis: Redis, work_dir: Path, max_seconds: int) -> None:
        self.redis, self.work_dir, self.max_seconds = redis, work_dir, max_seconds
        self._offset, self._done = 0, threading.Event()
        self._lock = threading.Lock()
        self._publisher: threading.Thread | None = None

    def folder(self, run_id: str) -> Path:
        return self.work_dir / run_id

    def mark_running(self, run_id: str, pid: int) -> bool:
        fields = {"status": "running", "started": time.time(), "host": socket.gethostname(), "pid": pid}
        self.redis.set(_key(run_id, "alive"), 1, ex=ALIVE_SECONDS)
        if not _update_if(self.redis, run_id, ("queued",), fields, finished=False):
            return False
        self._publisher = threading.Thread(target=self._publish_loop, args=(run_id,), daemon=True)
        self._publisher.start()
        return True

    def heartbeat(self, run_id: str) -> None:
        self.redis.set(_key(run_id, "alive"), 1, ex=ALIVE_SECONDS)

    def stop_requested(self, run_id: str) -> bool:
        """A stop was asked for, or the run no longer counts as running (it was failed by a
        reader that lost sight of this worker): either way, end after this step."""
        try:
            with self.redis.pipeline(transaction=False) as pipe:
                stop, status = pipe.exists(_key(run_id, "stop")).hget(_key(run_id), "status").execute()
        except RedisError:  # Redis restarting: train on, ask again in 50 ms
            return False
        return bool(stop) or status != b"running"

    def finish(self, run_id: str, status: Status, error: str | None = None) -> None:
        self._done.set()
        if self._publisher is not None:
            self._publisher.join(timeout=10)
        self.publish(run_id)
        folder = self.folder(run_id)
        files = {}
        for name in (WEIGHTS_FILE, META_FILE):
            path = folder / name
            if path.is_file() and path.stat().st_size <= MAX_FILE_BYTES:
                files[name] = path.read_bytes()
        if files:
            self.redis.hset(_key(run_id, "files"), mapping=files)
        snapshots = _key(run_id, "snapshots")
        stored = sum(len(v) for v in files.values())
        stored += sum(self.redis.hstrlen(snapshots, k) for k in self.redis.hkeys(snapshots))
        fields = {"status": status, "error": error or "", "finished": time.time(), "bytes": stored}
        _update_if(self.redis, run_id, ("starting", "running"), fields, finished=True)
        self.redis.delete(_key(run_id, "stop"))

    def publish(self, run_id: str) -> None:
        """Upload the complete progress lines written since the last call; a snapshot's
        file goes up before the line that names it."""
        with self._lock:
            path = self.folder(run_id) / PROGRESS_FILE
            if not path.is_file():
                return
            with open(path, "rb") as f:
                f.seek(self._offset)
                chunk = f.read()
            end = chunk.rfind(b"\n") + 1
            if not end:
                return
            lines = chunk[:end].splitlines()
            for line in lines:
                record = json.loads(line)
                if record.get("kind") == "snapshot":
                    name = Path(str(record["file"])).name
                    data = (self.folder(run_id) / SNAPSHOT_DIR / name).read_bytes()
                    if len(data) <= MAX_FILE_BYTES:
                        self.redis.hset(_key(run_id, "snapshots"), name, data)
            self.redis.rpush(_key(run_id, "progress"), *lines)
            self._offset += end

    def _publish_loop(self, run_id: str) -> None:
        last_reap = time.monotonic()
        while not self._done.wait(PUBLISH_EVERY):
            with contextlib.suppress(RedisError, OSError, ValueError):  # the next round retries
                self.heartbeat(run_id)
                self.publish(run_id)
                if time.monotonic() - last_reap > ALIVE_SECONDS / 2:
                    reap_all(self.redis)  # other workers' silent runs, even with no page open
                    last_reap = time.monotonic()


def run_job(run_id: str) -> str:
    """The RQ job: fetch the run's request (and corpus) from Redis into a work folder, train
    it on this worker's device with run_process.execute, store the result; returns its status."""
    from rq import get_current_job

    from attention_lab.serving.run_process import execute

    job = get_current_job()
    if job is None or not is_run_id(run_id):
        raise RunError("run_job runs inside an RQ worker, with a run id")
    redis = job.connection
    prepare_run_process()
    own_bound = settings.run_max_seconds()  # the replica's bound holds if shorter
    max_seconds = min(own_bound, int(redis.hget(_key(run_id), "max_seconds") or own_bound))
    with tempfile.TemporaryDirectory(prefix=f"{run_id}-", dir=work_root(os.getppid())) as tmp:
        side = WorkerSide(redis, Path(tmp), max_seconds)
        folder = side.folder(run_id)
        folder.mkdir()
        try:
            request, corpus = _fetch_inputs(redis, run_id)
        except RunError as e:
            if side.mark_running(run_id, os.getpid()):
                side.finish(run_id, "failed", str(e))
                _LOG.warning("run %s failed: %s", run_id, e)
            return "failed"
        device = os.environ.get(DEVICE_ENV, "auto")
        request = dataclasses.replace(request, train={**request.train, "device": device})
        (folder / REQUEST_FILE).write_text(request.to_json(), encoding="utf-8")
        if corpus is not None:
            (folder / CORPUS_FILE).write_text(corpus, encoding="utf-8")
        return execute(side, run_id)


def _fetch_inputs(redis: Redis, run_id: str) -> tuple[RunRequest, str | None]:
    """The run's request and corpus as they came through the queue, size-checked before
    they are read (a request is JSON, a corpus UTF-8 text of at most MAX_CORPUS_CHARS)."""
    if redis.strlen(_key(run_id, "request")) > MAX_REQUEST_BYTES:
        raise RunError("the run's request is larger than a run may use")
    raw = redis.get(_key(run_id, "request"))
    if raw is None:
        raise RunError("the run's request is gone from the queue")
    try:
        request = RunRequest(**json.loads(raw))
    except (ValueError, TypeError) as e:
        raise RunError(f"the run's request is unreadable ({e})") from None
    if redis.strlen(_key(run_id, "corpus")) > 4 * MAX_CORPUS_CHARS:  # UTF-8: at most 4 bytes a character
        raise RunError("the corpus is larger than a run may use")
    data = redis.get(_key(run_id, "corpus"))
    if data is None:
        return request, None
    try:
        corpus = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RunError("the corpus is not UTF-8 text") from None
    if len(corpus) > MAX_CORPUS_CHARS:
        raise RunError(f"corpus: at most {MAX_CORPUS_CHARS:,} characters, got {len(corpus):,}")
    return request, corpus


class RunJob(Job):
    """A job that may only be `run_job`: a worker never runs any other function, nor a
    success/failure/stopped callback named in the job, whoever managed to enqueue it."""

    def _execute(self):  # noqa: ANN202 (RQ's signature)
        if self.func_name != RUN_JOB:
            raise PermissionError(f"this worker only runs {RUN_JOB}, not {self.func_name!r}")
        return super()._execute()

    @property
    def success_callback(self) -> None:
        return None

    @property
    def failure_callback(self) -> None:
        return None

    @property
    def stopped_callback(self) -> None:
        return None


class RunWorker(Worker):
    """RQ's worker; on SIGTERM/SIGINT it also asks its current run to stop, so the run is
    saved as "stopped" within a step and the worker exits (RQ's warm shutdown waits for it).

    While Redis is away RQ's own loop retries the dequeue, by default after 1, 2, 4, ... up
    to 60 s: a worker that lost Redis for 10 s then slept another 16-32 s after it came
    back, and runs queued meanwhile waited (the flaky "Redis restart" test). Here it asks
    again every RECONNECT_EVERY seconds, so it serves again within 2 s of Redis's return."""

    exponential_backoff_factor = 1.0
    max_connection_wait_time = RECONNECT_EVERY
    stop_signalled = False  # set by SIGTERM/SIGINT: work() then returns for good

    def request_stop(self, signum, frame) -> None:  # noqa: ANN001 (a signal handler)
        self.stop_signalled = True
        job_id = self.get_current_job_id()
        if job_id and is_run_id(job_id):
            with contextlib.suppress(RedisError):
                self.connection.set(_key(job_id, "stop"), 1, ex=3600)
        super().request_stop(signum, frame)

    def handle_work_horse_killed(self, job: Job, retpid: int, ret_val: int, rusage: object) -> None:
        """The horse died under a live worker (the OOM killer, a signal): its run fails now,
        with the reason, instead of when its `alive` key expires."""
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)
        for folder in work_root(os.getpid()).glob(f"{job.id}-*"):  # what the horse could not remove
            shutil.rmtree(folder, ignore_errors=True)
        how = f"signal {os.WTERMSIG(ret_val)}" if ret_val and os.WIFSIGNALED(ret_val) else f"status {ret_val}"
        if is_run_id(job.id):
            with contextlib.suppress(RedisError):
                fail_run(
                    self.connection, job.id, f"the run's process ended unexpectedly ({how}; out of memory?)"
                )


def work_root(worker_pid: int) -> Path:
    """Where a worker's horses keep their runs' work folders (one folder per worker, so
    that what a killed horse or worker leaves behind can be found and removed)."""
    return Path(tempfile.gettempdir()) / f"attention-lab-worker-{worker_pid}"


def remove_stale_work_roots() -> None:
    """Work folders of this host's workers that were killed (their pid is gone)."""
    for root in Path(tempfile.gettempdir()).glob("attention-lab-worker-*"):
        pid = root.name.rsplit("-", 1)[1]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(root, ignore_errors=True)


def serve_worker(url: str, device: str) -> int:
    """`python -m transformer_core worker`: take runs from the queue one at a time, each in
    its own work-horse process, until SIGINT/SIGTERM (the current run is stopped and saved).
    When Redis goes away (a restart), wait for it and serve again as a fresh RQ worker."""
    logs.process_logging()
    os.environ[DEVICE_ENV] = resolve_device_before_fork(device).type  # read by run_job in the horse
    redis = connect(url)
    try:
        redis.ping()
    except RedisError as e:
        raise ConfigError(f"cannot reach Redis at {url} ({e})") from None
    import attention_lab.serving.run_process  # noqa: F401  (torch and the trainer, once, before any fork)

    remove_stale_work_roots()
    work_root(os.getpid()).mkdir(parents=True, exist_ok=True)
    name = f"{socket.gethostname()}-{os.getpid()}"
    _LOG.info("worker %s serves the run queue at %s on %s", name, redis_place(url), os.environ[DEVICE_ENV])
    beating = threading.Event()
    threading.Thread(target=_beat_loop, args=(url, name, beating), name="beat", daemon=True).start()
    try:
        return _serve(redis, url, name)
    finally:
        beating.set()
        with contextlib.suppress(RedisError):
            redis.zrem(WORKERS_SET, name)  # a clean stop frees the slot at once


def _beat_loop(url: str, name: str, stop: threading.Event) -> None:
    """Every BEAT_EVERY seconds: this worker process is alive (its slot counts). Its own
    connection, never used by a forked work horse; a Redis outage is waited out."""
    redis = connect(url)
    while True:
        with contextlib.suppress(RedisError):
            beat(redis, name)
        if stop.wait(BEAT_EVERY):
            return


def _serve(redis: Redis, url: str, name: str) -> int:
    """RQ's worker loop, one fresh RQ worker per Redis outage, until a warm shutdown."""
    for generation in itertools.count():
        worker = RunWorker(
            [rq_queue(redis)],
            connection=redis,
            serializer=JSONSerializer,
            job_class=RunJob,
            name=f"attention-lab-{name}-{generation}",  # unique per life
            worker_ttl=WORKER_TTL,
        )
        try:
            worker.work(logging_level="INFO")
        except (RedisConnectionError, RedisTimeoutError) as e:
            _wait_for_redis(redis, url, f"lost Redis: {e}")
            continue
        if worker.stop_signalled:
            return 0  # a warm shutdown: SIGINT/SIGTERM
        # RQ's loop also ends by itself (a Redis timeout mid-job, an error it does not handle):
        # this process must not then exit as if stopped, leaving the queue without a worker.
        _wait_for_redis(redis, url, "RQ's worker loop ended by itself")
    return 0


def _wait_for_redis(redis: Redis, url: str, error: Exception | str) -> None:
    """Ping every RECONNECT_EVERY seconds until Redis answers; no run is in progress, so a
    signal meanwhile simply ends the process."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _LOG.warning("worker: %s (Redis at %s); serving again once it answers", error, redis_place(url))
    while True:
        time.sleep(RECONNECT_EVERY)
        with contextlib.suppress(RedisError):
            if redis.ping():
                _LOG.info("worker: Redis at %s is back", redis_place(url))
                return


def redis_place(url: str) -> str:
    """Where a Redis URL points (host:port/db), without the password it may hold."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 6379}{parts.path}"
