"""Debian's redis-server on a free loopback port for tests, and a polling wait."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from redis import Redis

REDIS_SERVER = "/usr/bin/redis-server"


def wait(predicate: Callable[[], bool], timeout: float = 60.0, every: float = 0.05) -> float:
    """Poll until `predicate` holds; returns the seconds it took."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting")
        time.sleep(every)
    return time.monotonic() - start


@dataclass
class RedisServer:
    """Debian's redis-server on 127.0.0.1:port, append-only file in `folder`."""

    port: int
    folder: Path
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        with open(self.folder / "redis.log", "a") as log:  # the child keeps its own copy
            self.proc = subprocess.Popen(
                [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.folder),
                 "--save", "", "--appendonly", "yes", "--protected-mode", "yes"],
                stdout=log,
            )  # fmt: skip
        wait(self._pong, timeout=20)

    def _pong(self) -> bool:
        try:
            return bool(Redis(port=self.port, socket_connect_timeout=0.5).ping())
        except Exception:
            return False

    def stop(self) -> None:
        """SIGTERM: Redis flushes its append-only file and exits."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
            self.proc = None
