"""The worker's side of the Redis run queue: `python -m transformer_core worker`.

An RQ worker takes one run at a time (RQ forks a work horse per job, so a run's memory,
GPU memory included, goes back when it ends). The horse runs `run_job`: the run's request
comes from Redis into a local work folder, `worker.execute` trains it exactly as on one box,
and a publisher thread uploads its progress lines and snapshots as they appear; at the end
the checkpoint files go to Redis too. A worker performs no job function but `run_job`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from redis import Redis
from redis.exceptions import RedisError
from rq import Worker
from rq.job import Job
from rq.serializers import JSONSerializer

from transformer_core.errors import ConfigError
from transformer_core.io.checkpoint import META_FILE, WEIGHTS_FILE, is_run_id
from transformer_core.train.redis_queue import (
    ALIVE_SECONDS,
    MAX_FILE_BYTES,
    PUBLISH_EVERY,
    RUN_JOB,
    _key,
    _update_if,
    connect,
    rq_queue,
)
from transformer_core.train.runs import (
    CORPUS_FILE,
    MAX_CORPUS_CHARS,
    PROGRESS_FILE,
    REQUEST_FILE,
    SNAPSHOT_DIR,
    RunError,
    RunRequest,
    Status,
    env_int,
)


class WorkerSide:
    """What worker.execute needs from a queue, for one run claimed from Redis: the run
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
        return bool(self.redis.exists(_key(run_id, "stop")))

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
        while not self._done.wait(PUBLISH_EVERY):
            with contextlib.suppress(RedisError, OSError, ValueError):  # the next round retries
                self.heartbeat(run_id)
                self.publish(run_id)


def run_job(run_id: str) -> str:
    """The RQ job: fetch the run's request (and corpus) from Redis into a work folder, train
    it on this worker's device with worker.execute, store the result; returns its status."""
    import torch
    from rq import get_current_job

    from transformer_core.train.worker import execute

    job = get_current_job()
    if job is None or not is_run_id(run_id):
        raise RunError("run_job runs inside an RQ worker, with a run id")
    redis = job.connection
    with contextlib.suppress(OSError):
        os.nice(env_int("ATTENTION_LAB_RUN_NICE", 10, low=0))
    torch.set_num_threads(env_int("ATTENTION_LAB_RUN_THREADS", 1))
    with tempfile.TemporaryDirectory(prefix="attention-lab-run-") as tmp:
        side = WorkerSide(redis, Path(tmp), env_int("ATTENTION_LAB_RUN_MAX_SECONDS", 3600))
        folder = side.folder(run_id)
        folder.mkdir()
        raw = redis.get(_key(run_id, "request"))
        if raw is None:
            return "not-found"
        request = RunRequest(**json.loads(raw))
        device = os.environ.get("ATTENTION_LAB_WORKER_DEVICE", "auto")
        request = dataclasses.replace(request, train={**request.train, "device": device})
        (folder / REQUEST_FILE).write_text(request.to_json(), encoding="utf-8")
        corpus = redis.get(_key(run_id, "corpus"))
        if corpus is not None:
            if len(corpus) > 4 * MAX_CORPUS_CHARS:  # UTF-8: at most 4 bytes a character
                side.finish(run_id, "failed", "the corpus is larger than a run may use")
                return "failed"
            (folder / CORPUS_FILE).write_bytes(corpus)
        return execute(side, run_id)  # type: ignore[arg-type]


class RunJob(Job):
    """A job that may only be `run_job`: a worker never runs any other function, whoever
    managed to enqueue it."""

    def _execute(self):  # noqa: ANN202 (RQ's signature)
        if self.func_name != RUN_JOB:
            raise PermissionError(f"this worker only runs {RUN_JOB}, not {self.func_name!r}")
        return super()._execute()


class RunWorker(Worker):
    """RQ's worker; on SIGTERM/SIGINT it also asks its current run to stop, so the run is
    saved as "stopped" within a step and the worker exits (RQ's warm shutdown waits for it)."""

    def request_stop(self, signum, frame) -> None:  # noqa: ANN001 (a signal handler)
        job_id = self.get_current_job_id()
        if job_id and is_run_id(job_id):
            with contextlib.suppress(RedisError):
                self.connection.set(_key(job_id, "stop"), 1, ex=3600)
        super().request_stop(signum, frame)


def serve_worker(url: str, device: str) -> int:
    """`python -m transformer_core worker`: take runs from the queue one at a time, each in
    its own work-horse process, until SIGINT/SIGTERM (the current run is stopped and saved)."""
    redis = connect(url)
    try:
        redis.ping()
    except RedisError as e:
        raise ConfigError(f"cannot reach Redis at {url} ({e})") from None
    os.environ["ATTENTION_LAB_WORKER_DEVICE"] = device  # read by run_job in the work horse
    worker = RunWorker(
        [rq_queue(redis)],
        connection=redis,
        serializer=JSONSerializer,
        job_class=RunJob,
        name=f"attention-lab-{socket.gethostname()}-{os.getpid()}",
    )
    worker.work(logging_level="INFO")
    return 0
