"""Which run queue serves this process: the on-disk one (one box, the default) or Redis
(several hosts, ATTENTION_LAB_REDIS_URL). The one place that chooses; Redis and RQ are
imported only when chosen.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from transformer_core.io.checkpoint import is_run_id
from transformer_core.train.runs import RunQueue

if TYPE_CHECKING:
    from transformer_core.train.redis_queue import RedisRunQueue

REDIS_URL_ENV = "ATTENTION_LAB_REDIS_URL"


def redis_url() -> str | None:
    """ATTENTION_LAB_REDIS_URL (redis://[:password@]host:port/db), or None for the on-disk queue."""
    return os.environ.get(REDIS_URL_ENV) or None


def open_run_queue(root: Path | None = None, max_running: int | None = None) -> RunQueue | RedisRunQueue:
    """The run queue this process uses; `root` is the runs folder (for Redis: the local
    mirror of the runs shown here), `max_running` the on-disk queue's cap (with Redis the
    cap is the number of workers)."""
    url = redis_url()
    if url:
        from transformer_core.train.redis_queue import RedisRunQueue

        return RedisRunQueue(url, root)
    return RunQueue(root, max_running=max_running)


def fetch_run(run_id: str, root: Path | None = None) -> None:
    """With Redis, bring a finished run's checkpoint into the local runs folder so its id
    opens here (pages, CLI). Without Redis, or for anything but a run id: nothing to do."""
    url = redis_url()
    if not url or not is_run_id(run_id):
        return
    from redis.exceptions import RedisError

    from transformer_core.errors import ConfigError
    from transformer_core.train.redis_queue import RedisRunQueue

    with contextlib.suppress(RedisError, ConfigError):  # unreachable: the id is then "unknown here"
        RedisRunQueue(url, root).info(run_id)
