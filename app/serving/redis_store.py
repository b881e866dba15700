"""Runs on a Redis queue (RQ) for several hosts: app replicas anywhere submit, watch and stop
runs; `python -m transformer_core worker` processes on any host train them.

Why: one box's on-disk queue (sqlite_store.SQLiteRunStore) cannot be shared by app replicas on several
hosts, nor reach GPUs on other boxes. ATTENTION_LAB_REDIS_URL switches the app to this
queue; the on-disk queue stays the default.

Everything a run has lives in Redis under `attention_lab:run:<run id>`:
- `…` (hash): label, owner, uploaded (1: an uploaded corpus), task, status,
  created/started/finished, host, pid, error, bytes, seq, max_seconds (the wall-clock
  bound of the replica that submitted it; a worker's own ATTENTION_LAB_RUN_MAX_SECONDS caps it);
- `…:request` (the RunRequest JSON), `…:corpus` (an uploaded corpus, deleted at the end);
- `…:progress` (list): the worker's progress.jsonl lines, in order;
- `…:snapshots` (hash): snapshot file name -> safetensors bytes;
- `…:files` (hash): model.safetensors and checkpoint.json once the run is saved;
- `…:alive` (expires after ALIVE_SECONDS): refreshed by the worker while it trains;
- `…:stop` (present = stop requested).
Queue-wide: `attention_lab:seq` (a counter: submission order), `attention_lab:queued`
(sorted set by submission order: positions), `attention_lab:active` (set),
`attention_lab:finished` (sorted set by end time: eviction), `attention_lab:owner:<owner>`
(sorted set by submission order: a person's runs, their limits), and RQ's own queue
`attention-lab-runs` whose jobs carry only the run id (job id = run id, JSON).

Each replica mirrors a run it shows into its local runs folder (`<runs dir>/<run id>/`, the
same layout the on-disk queue writes), so progress, snapshots and the finished checkpoint
are read by the same code on one box and on many, and a `run-` id opens everywhere.

Faults: the worker's work horse refreshes `alive` (TTL ALIVE_SECONDS); whoever reads a
starting/running run whose `alive` expired (a replica's info/dispatch, any other worker's
horse) marks it failed, in one optimistic transaction, so a SIGKILLed worker's run fails
within ALIVE_SECONDS of its last sign of life. A horse that dies under a live worker (the
OOM killer) is failed by that worker at once. Redis runs with append-only persistence
(deploy/multihost/redis-attention-lab.conf): finished runs survive its restart.

Nothing is pickled: RQ uses its JSON serializer, arrays are safetensors, and a worker runs
only `run_job` (any other job function, and any job callback, is refused).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import logging
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from redis import Redis, WatchError
from redis.exceptions import RedisError
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

import attention_lab.serving.settings as settings
from attention_lab.serving.ids import RunError, is_run_id, new_run_id, run_folder
from attention_lab.serving.progress import PROGRESS_FILE, SNAPSHOT_DIR
from attention_lab.serving.quota import PersonUsage, hold_to_limits
from attention_lab.serving.request import RunRequest, check_submission
from attention_lab.serving.store import ACTIVE, FINISHED, RunInfo, as_status
from transformer_core.errors import ConfigError
from transformer_core.io import META_FILE, WEIGHTS_FILE

PREFIX = "attention_lab"
RQ_QUEUE = "attention-lab-runs"
RUN_JOB = "attention_lab.serving.redis_worker.run_job"  # the only job a worker performs
ALIVE_SECONDS = 6  # a running run whose worker has not refreshed `alive` this long has failed
PUBLISH_EVERY = 0.5  # seconds between the worker's progress uploads (and alive refreshes)
MAX_FILE_BYTES = 64 * 2**20  # one checkpoint or snapshot file; these models are a few MB
MAX_REQUEST_BYTES = 64 * 2**10  # a RunRequest's JSON is a few hundred bytes
WORKER_TTL = 30  # seconds: RQ's own registration of a worker (its `Worker.all` listing)
BEAT_EVERY = 1.0  # seconds between a worker process's beats in WORKERS_SET
_LOG = logging.getLogger(__name__)


@functools.cache
def connect(url: str) -> Redis:
    """One connection pool per URL for the process (a pool, not per-user data)."""
    try:
        return Redis.from_url(url, socket_connect_timeout=5, health_check_interval=30)
    except ValueError as e:
        raise ConfigError(f"{url!r} is not a Redis URL redis://[:password@]host:port/db ({e})") from None


def _key(run_id: str, part: str = "") -> str:
    return f"{PREFIX}:run:{run_id}" + (f":{part}" if part else "")


QUEUED, ACTIVE_SET, FINISHED_SET, SEQ = (f"{PREFIX}:{n}" for n in ("queued", "active", "finished", "seq"))


def _owner_key(owner: str) -> str:
    return f"{PREFIX}:owner:{owner}"


WORKERS_SET = f"{PREFIX}:workers"  # sorted set: worker process -> time of its last beat


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode()


def _float(value: bytes | None) -> float | None:
    return None if value in (None, b"") else float(value)


def rq_queue(connection: Redis) -> Queue:
    return Queue(RQ_QUEUE, connection=connection, serializer=JSONSerializer)


class RedisRunStore:
    """The page's side (a RunStore), like the on-disk SQLiteRunStore.

    root: this replica's local mirror of the runs it shows (default: the runs dir);
    max_bytes: budget of the finished runs kept in Redis (oldest evicted first);
    max_seconds: wall-clock bound of one run (the worker stops it and saves).
    """

    def __init__(
        self,
        url: str,
        root: Path | None = None,
        *,
        max_bytes: int | None = None,
        max_seconds: int | None = None,
    ) -> None:
        self.url, self.redis = url, connect(url)
        self.root = Path(root) if root is not None else settings.runs_dir()
        self.max_bytes = max_bytes if max_bytes is not None else settings.runs_max_bytes()
        self.max_seconds = max_seconds if max_seconds is not None else settings.run_max_seconds()
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self.redis.ping()
        except RedisError as e:
            raise ConfigError(f"{settings.REDIS_URL_ENV}: cannot reach Redis at {url} ({e})") from None

    @property
    def max_running(self) -> int:
        """The cap is the number of live worker processes serving the queue: a killed
        worker's slot is gone within ALIVE_SECONDS (RQ's own registration lasts WORKER_TTL)."""
        return live_workers(self.redis)

    def folder(self, run_id: str) -> Path:
        return run_folder(self.root, run_id)

    # -------------------------------------------------- submit, read, stop

    def submit(self, request: RunRequest, corpus: str | None = None) -> str:
        """Store the request (and corpus) in Redis and enqueue its RQ job. Returns the run id."""
        check_submission(request, corpus)
        self.enforce_disk_budget()
        with self._person_lock(request.owner):  # check and add as one step: tabs pressing at once
            hold_to_limits(self.usage, request.owner, uploading=corpus is not None)
            run_id = self._add(request, corpus)
        rq_queue(self.redis).enqueue(
            RUN_JOB,
            run_id,
            job_id=run_id,
            job_timeout=self.max_seconds + 300,  # the worker stops itself at max_seconds and saves
            result_ttl=3600,
            failure_ttl=24 * 3600,
        )
        self._log_queued(run_id)
        return run_id

    def _log_queued(self, run_id: str) -> None:
        """The queue decision: workers pull runs, so a run waits unless a live worker is free."""
        busy, workers = self.redis.scard(ACTIVE_SET), live_workers(self.redis)
        place = self.redis.zrank(QUEUED, run_id)
        if not workers:
            why = "no worker serves the queue now"
        else:
            why = f"{max(0, workers - busy)} of {workers} live workers free"
        _LOG.info("run %s queued on Redis: %s (place %s)", run_id, why, None if place is None else place + 1)

    @contextlib.contextmanager
    def _person_lock(self, owner: str) -> Iterator[None]:
        """One submit at a time per person, box-wide (a Redis lock; none for a script's "")."""
        if not owner:
            yield
            return
        with self.redis.lock(f"{_owner_key(owner)}:submit", timeout=30, blocking_timeout=30):
            yield

    def _add(self, request: RunRequest, corpus: str | None) -> str:
        """Write the run's hash, request and corpus, queue it and file it under its owner."""
        run_id = new_run_id()
        seq = self.redis.incr(SEQ)
        fields = {
            "label": request.label,
            "owner": request.owner,
            "uploaded": int(corpus is not None),
            "task": request.train_config().task,
            "status": "queued",
            "created": time.time(),
            "seq": seq,
            "max_seconds": self.max_seconds,
        }
        with self.redis.pipeline() as pipe:
            pipe.hset(_key(run_id), mapping=fields)
            pipe.set(_key(run_id, "request"), request.to_json())
            if corpus is not None:
                pipe.set(_key(run_id, "corpus"), corpus)
            pipe.zadd(QUEUED, {run_id: seq})
            if request.owner:
                pipe.zadd(_owner_key(request.owner), {run_id: seq})
            pipe.execute()
        return run_id

    def info(self, run_id: str) -> RunInfo | None:
        """The run's state (None for an id Redis never had); mirrors what is new into the
        local folder and fails a running run whose worker went silent."""
        if not is_run_id(run_id):
            return None
        row = self.redis.hgetall(_key(run_id))
        if not row:
            return None
        status = row[b"status"].decode()
        if status in ("starting", "running") and reap(self.redis, run_id):
            row = self.redis.hgetall(_key(run_id))
            status = row[b"status"].decode()
        if status == "evicted":
            shutil.rmtree(self.folder(run_id), ignore_errors=True)
        else:
            self._mirror(run_id, finished=status in FINISHED)
        rank = self.redis.zrank(QUEUED, run_id) if status == "queued" else None
        pid = row.get(b"pid")
        return RunInfo(
            run_id,
            row[b"label"].decode(),
            row[b"task"].decode(),
            as_status(status),
            float(row[b"created"]),
            _float(row.get(b"started")),
            _float(row.get(b"finished")),
            int(pid) if pid else None,
            _text(row.get(b"error")) or None,
            None if rank is None else rank + 1,
            _text(row.get(b"owner")) or "",
        )

    def counts(self) -> tuple[int, int]:
        """(runs training, runs waiting) across every host; a run whose worker went silent
        is failed first, so it holds no slot."""
        reap_all(self.redis)
        return self.redis.scard(ACTIVE_SET), self.redis.zcard(QUEUED)

    def stop(self, run_id: str) -> None:
        """A waiting run is cancelled at once; a running one ends after its current step
        (its worker watches the stop key every 50 ms) and is saved."""
        if not is_run_id(run_id) or not self.redis.exists(_key(run_id)):
            raise RunError(f"unknown run {run_id}")
        cancelled = _update_if(
            self.redis, run_id, ("queued",), {"status": "stopped", "finished": time.time()}, finished=True
        )
        if cancelled:
            _LOG.info("run %s stopped while waiting", run_id)
            with contextlib.suppress(Exception):
                Job.fetch(run_id, connection=self.redis, serializer=JSONSerializer).cancel()
        else:
            _LOG.info("run %s: stop asked for", run_id)
            self.redis.set(_key(run_id, "stop"), 1, ex=24 * 3600)

    def dispatch(self) -> list[str]:
        """Fail runs whose worker went silent (workers pull their own runs)."""
        reap_all(self.redis)
        return []

    def has_checkpoint(self, run_id: str) -> bool:
        self._mirror(run_id, finished=True)
        return (self.folder(run_id) / META_FILE).is_file()

    def runs_of(self, owner: str, latest: int = 50) -> list[RunInfo]:
        """The `latest` runs `owner` started, newest first ("my runs"), from their hashes."""
        if not owner:
            return []
        ids = [r.decode() for r in self.redis.zrevrange(_owner_key(owner), 0, latest - 1)]
        waiting = [r.decode() for r in self.redis.zrange(QUEUED, 0, -1)]
        rows = self._rows(ids)
        return [_info_of(run_id, row, waiting) for run_id, row in zip(ids, rows, strict=True) if row]

    def usage(self, owner: str) -> PersonUsage:
        """What `owner` holds now: runs waiting or training, kept runs on an uploaded corpus,
        and the bytes their finished runs keep in Redis (a training run's corpus counts)."""
        ids = [r.decode() for r in self.redis.zrange(_owner_key(owner), 0, -1)]
        rows = [row for row in self._rows(ids) if row and row[b"status"] != b"evicted"]
        with self.redis.pipeline() as pipe:
            for run_id in ids:
                pipe.strlen(_key(run_id, "corpus"))
            corpus_bytes = sum(pipe.execute())
        return PersonUsage(
            active=sum(row[b"status"].decode() in ACTIVE for row in rows),
            uploads=sum(row.get(b"uploaded") == b"1" for row in rows),
            bytes=corpus_bytes + sum(int(row.get(b"bytes") or 0) for row in rows),
        )

    def _rows(self, ids: list[str]) -> list[dict[bytes, bytes]]:
        with self.redis.pipeline() as pipe:
            for run_id in ids:
                pipe.hgetall(_key(run_id))
            return pipe.execute()

    def overview(self, latest: int) -> tuple[dict[str, int], list[RunInfo]]:
        """({status: runs}, every waiting or training run and the `latest` newest others),
        from the sets (no run's files are mirrored); the admin's figures."""
        redis = self.redis
        waiting = [r.decode() for r in redis.zrange(QUEUED, 0, -1)]
        ids = waiting + sorted(r.decode() for r in redis.smembers(ACTIVE_SET))
        ids += [r.decode() for r in redis.zrevrange(FINISHED_SET, 0, latest - 1)]
        rows = self._rows(ids)
        infos = [_info_of(run_id, row, waiting) for run_id, row in zip(ids, rows, strict=True) if row]
        counts: dict[str, int] = {}
        for info in infos:
            counts[info.status] = counts.get(info.status, 0) + 1
        counts.update({"done": 0, "stopped": 0, "failed": 0})
        with redis.pipeline() as pipe:  # every finished run's status, not only the listed ones
            for run_id in redis.zrange(FINISHED_SET, 0, -1):
                pipe.hget(_key(run_id.decode()), "status")
            for status in pipe.execute():
                if status:
                    counts[status.decode()] = counts.get(status.decode(), 0) + 1
        return counts, infos

    # -------------------------------------------------- faults and budget

    def enforce_disk_budget(self) -> list[str]:
        """Evict finished runs from Redis, oldest first, until they fit max_bytes; their
        hash stays with status 'evicted' (the id then says "expired", not "unknown")."""
        finished = [r.decode() for r in self.redis.zrange(FINISHED_SET, 0, -1)]
        sizes = [int(self.redis.hget(_key(r), "bytes") or 0) for r in finished]
        total, evicted = sum(sizes), []
        for run_id, size in zip(finished, sizes, strict=True):
            if total <= self.max_bytes:
                break
            note = f"deleted to keep the finished runs under {self.max_bytes / 2**20:g} MB"
            with self.redis.pipeline() as pipe:
                pipe.delete(*(_key(run_id, p) for p in ("progress", "snapshots", "files", "request")))
                pipe.hset(_key(run_id), mapping={"status": "evicted", "error": note})
                pipe.zrem(FINISHED_SET, run_id)
                pipe.execute()
            shutil.rmtree(self.folder(run_id), ignore_errors=True)
            _LOG.info("run %s evicted: finished runs hold %.1f MB in Redis, over the %g MB budget",
                      run_id, total / 2**20, self.max_bytes / 2**20)  # fmt: skip
            total -= size
            evicted.append(run_id)
        return evicted

    # -------------------------------------------------- the local mirror

    def _mirror(self, run_id: str, *, finished: bool) -> None:
        """Append the progress lines (and their snapshot files) this replica has not seen,
        and, once finished, the checkpoint files. One process at a time per folder."""
        folder = self.folder(run_id)
        (folder / SNAPSHOT_DIR).mkdir(parents=True, exist_ok=True)
        with _locked(folder / ".mirror.lock"):
            count_file = folder / ".mirrored-lines"
            have = int(count_file.read_text() or 0) if count_file.is_file() else 0
            lines = self.redis.lrange(_key(run_id, "progress"), have, -1)
            if lines:
                for line in lines:
                    record = json.loads(line)
                    if record.get("kind") == "snapshot":
                        name = Path(str(record["file"])).name  # never a path out of the folder
                        data = self._file(_key(run_id, "snapshots"), name)
                        if data is not None:
                            (folder / SNAPSHOT_DIR / name).write_bytes(data)
                with open(folder / PROGRESS_FILE, "ab") as f:
                    f.write(b"".join(line + b"\n" for line in lines))
                count_file.write_text(str(have + len(lines)))
            if finished and not (folder / META_FILE).is_file():
                files = self._files(run_id)
                if WEIGHTS_FILE.encode() in files and META_FILE.encode() in files:
                    (folder / WEIGHTS_FILE).write_bytes(files[WEIGHTS_FILE.encode()])
                    tmp = folder / (META_FILE + ".tmp")
                    tmp.write_bytes(files[META_FILE.encode()])
                    tmp.replace(folder / META_FILE)  # the meta file last: present = complete

    def _file(self, key: str, name: str) -> bytes | None:
        """One stored file, None when absent or over MAX_FILE_BYTES (never pulled whole)."""
        if self.redis.hstrlen(key, name) > MAX_FILE_BYTES:
            return None
        return self.redis.hget(key, name)

    def _files(self, run_id: str) -> dict[bytes, bytes]:
        key = _key(run_id, "files")
        found = {name: self._file(key, name) for name in (WEIGHTS_FILE, META_FILE)}
        return {name.encode(): data for name, data in found.items() if data is not None}


def beat(redis: Redis, worker: str) -> None:
    """A worker process says it is alive (every BEAT_EVERY seconds) and drops silent ones."""
    now = time.time()
    with redis.pipeline() as pipe:
        pipe.zadd(WORKERS_SET, {worker: now})
        pipe.zremrangebyscore(WORKERS_SET, "-inf", now - ALIVE_SECONDS)
        pipe.execute()


def live_workers(redis: Redis) -> int:
    """Worker processes that beat within ALIVE_SECONDS (a read: pages ask on every run)."""
    return int(redis.zcount(WORKERS_SET, time.time() - ALIVE_SECONDS, "+inf"))


def reap(redis: Redis, run_id: str) -> bool:
    """Mark a starting/running run failed when its `alive` key expired; True if it did."""
    if redis.exists(_key(run_id, "alive")):
        return False
    started = _float(redis.hget(_key(run_id), "started")) or 0.0
    if time.time() - started < ALIVE_SECONDS:
        return False
    error = f"the run's worker stopped answering (no sign of life for {ALIVE_SECONDS} s)"
    return fail_run(redis, run_id, error)


def reap_all(redis: Redis) -> list[str]:
    """Reap every active run (replicas and workers call this); returns the runs failed."""
    return [r for r in (raw.decode() for raw in redis.smembers(ACTIVE_SET)) if reap(redis, r)]


def fail_run(redis: Redis, run_id: str, error: str) -> bool:
    """A starting/running run ends as failed with `error` (unless it already ended)."""
    fields = {"status": "failed", "finished": time.time(), "error": error}
    failed = _update_if(redis, run_id, ("starting", "running"), fields, finished=True)
    if failed:
        _LOG.warning("run %s failed: %s", run_id, error)
    return failed


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _update_if(redis: Redis, run_id: str, when: tuple[str, ...], fields: dict, *, finished: bool) -> bool:
    """Set `fields` on the run's hash only if its status is one of `when` (optimistic
    transaction: a worker finishing and a reader reaping never both win)."""
    key = _key(run_id)
    with redis.pipeline() as pipe:
        while True:
            try:
                pipe.watch(key)
                status = _text(pipe.hget(key, "status"))
                if status not in when:
                    pipe.unwatch()
                    return False
                pipe.multi()
                pipe.hset(key, mapping=fields)
                pipe.zrem(QUEUED, run_id)
                if finished:
                    pipe.srem(ACTIVE_SET, run_id)
                    pipe.zadd(FINISHED_SET, {run_id: time.time()})
                    pipe.delete(_key(run_id, "alive"), _key(run_id, "corpus"))
                else:
                    pipe.sadd(ACTIVE_SET, run_id)
                pipe.execute()
                return True
            except WatchError:
                continue


def _info_of(run_id: str, row: dict[bytes, bytes], waiting: list[str]) -> RunInfo:
    """A RunInfo from a run's hash (RedisRunStore.overview)."""

    def number(name: str) -> float | None:
        return float(row[name.encode()]) if row.get(name.encode()) else None

    text = {k.decode(): v.decode() for k, v in row.items()}
    pid = text.get("pid")
    return RunInfo(
        run_id, text.get("label", ""), text.get("task", ""), as_status(text["status"]),
        number("created") or 0.0, number("started"), number("finished"), int(pid) if pid else None,
        text.get("error") or None, waiting.index(run_id) + 1 if run_id in waiting else None,
        text.get("owner", ""),
    )  # fmt: skip
