"""Class sessions: a lecturer's view, shared box-wide so that students follow it live.

A lecturer starts a session and gets a follow code (96 random bits: the code is a
capability, like a run id). Each change of the lecturer's view (a page and its URL
parameters) is published as the session's next version; followers poll the version and
take the view when it moves, saying they are still there (the lecturer sees the count).
Every app process of a box shares one SQLite file in the runs folder; with
ATTENTION_LAB_REDIS_URL set, Redis holds the sessions for every host (`open_class_sessions`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import secrets
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from attention_lab.serving import settings

CODE_PATTERN = re.compile(r"^[A-Za-z0-9_-]{16}$")
FOLLOWING_SECONDS = 10  # a follower who has not polled this long no longer counts
MAX_VIEW_BYTES = 16 * 2**10  # a page and its parameters: a few hundred bytes
DB_FILE = "classes.sqlite3"
_LOG = logging.getLogger(__name__)


def new_class_code() -> str:
    """16 URL-safe characters (96 random bits): unguessable, so the code alone lets one follow."""
    return secrets.token_urlsafe(12)


def is_class_code(text: str) -> bool:
    return bool(CODE_PATTERN.match(text))


def code_ref(code: str) -> str:
    """How logs name a class session: a digest of its code, which is a capability and never logged."""
    return "class-" + hashlib.sha256(code.encode()).hexdigest()[:10]


def _log_start(code: str, hours: float) -> None:
    """The start of a class session, named by its digest."""
    _LOG.info("class session %s started, open for %g h", code_ref(code), hours)


def _log_end(code: str) -> None:
    """The lecturer's end of a class session, named by its digest."""
    _LOG.info("class session %s ended by its lecturer", code_ref(code))


@dataclass(frozen=True)
class ClassView:
    """What the lecturer shows: a page (its url_path, "" for Home) and its URL parameters;
    version counts the changes, so a follower knows when to move."""

    version: int
    page: str
    params: dict[str, str]
    expires: float  # epoch seconds
    ended: bool = False


class ClassSessions(Protocol):
    """Where class sessions live: one box (SQLite) or several hosts (Redis)."""

    def start(self, hours: float) -> str: ...
    def publish(self, code: str, page: str, params: dict[str, str]) -> None: ...
    def view(self, code: str, follower: str | None = None) -> ClassView | None: ...
    def still_here(self, code: str, followers: list[str]) -> None: ...
    def following(self, code: str) -> int: ...
    def end(self, code: str) -> None: ...


def _checked_view(page: str, params: dict[str, str]) -> str:
    text = json.dumps({"page": str(page), "params": {str(k): str(v) for k, v in params.items()}})
    if len(text.encode()) > MAX_VIEW_BYTES:
        raise ValueError(f"a view of {len(text)} bytes is too large to share (at most {MAX_VIEW_BYTES})")
    return text


class SQLiteClassSessions:
    """Class sessions in one SQLite file shared by every app process of the box."""

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS classes (code TEXT PRIMARY KEY, expires REAL, ended INTEGER DEFAULT 0,
        version INTEGER DEFAULT 0, view TEXT DEFAULT '{"page": "", "params": {}}');
    CREATE TABLE IF NOT EXISTS followers (code TEXT, follower TEXT, seen REAL, PRIMARY KEY (code, follower));
    """

    def __init__(self, root: Path | None = None) -> None:
        self.path = Path(root if root is not None else settings.runs_dir()) / DB_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(self.SCHEMA)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        try:
            yield db
        finally:
            db.close()

    def start(self, hours: float) -> str:
        code = new_class_code()
        with self._connect() as db:
            now = time.time()
            db.execute("DELETE FROM classes WHERE expires < ?", (now - 86400,))  # a day after: gone
            db.execute("DELETE FROM followers WHERE seen < ?", (now - 86400,))
            db.execute("INSERT INTO classes (code, expires) VALUES (?, ?)", (code, now + hours * 3600))
        _log_start(code, hours)
        return code

    def publish(self, code: str, page: str, params: dict[str, str]) -> None:
        view = _checked_view(page, params)
        with self._connect() as db:
            db.execute(
                "UPDATE classes SET version = version + 1, view = ? "
                "WHERE code = ? AND view != ? AND NOT ended",
                (view, code, view),
            )

    def view(self, code: str, follower: str | None = None) -> ClassView | None:
        if not is_class_code(code):
            return None
        with self._connect() as db:
            row = db.execute(
                "SELECT version, view, expires, ended FROM classes WHERE code = ?", (code,)
            ).fetchone()
        if row is None:
            return None
        if follower is not None:
            self.still_here(code, [follower])
        shown: dict[str, Any] = json.loads(row[1])
        return ClassView(int(row[0]), shown["page"], shown["params"], float(row[2]), bool(row[3]))

    def still_here(self, code: str, followers: list[str]) -> None:
        """The followers are there now (the lecturer's count): one transaction for them all (an
        app process beats for its whole class at once, not a write per follower)."""
        now = time.time()
        with self._connect() as db:
            db.execute("BEGIN")
            db.executemany(
                "INSERT OR REPLACE INTO followers VALUES (?, ?, ?)", [(code, f, now) for f in followers]
            )
            db.execute("COMMIT")

    def following(self, code: str) -> int:
        with self._connect() as db:
            (n,) = db.execute(
                "SELECT COUNT(*) FROM followers WHERE code = ? AND seen > ?",
                (code, time.time() - FOLLOWING_SECONDS),
            ).fetchone()
        return int(n)

    def end(self, code: str) -> None:
        with self._connect() as db:
            db.execute("UPDATE classes SET ended = 1 WHERE code = ?", (code,))
        _log_end(code)


class RedisClassSessions:
    """Class sessions in Redis, for app processes on several hosts; each expires with its session."""

    def __init__(self, url: str) -> None:
        from attention_lab.serving.redis_store import PREFIX, connect  # redis only where it is configured

        self.redis, self.prefix = connect(url), f"{PREFIX}:class"

    def _key(self, code: str, part: str = "") -> str:
        return f"{self.prefix}:{code}" + (f":{part}" if part else "")

    def start(self, hours: float) -> str:
        code, seconds = new_class_code(), int(hours * 3600) + 86400
        expires = time.time() + hours * 3600
        view = _checked_view("", {})
        self.redis.hset(self._key(code), mapping={"expires": expires, "ended": 0, "version": 0, "view": view})
        self.redis.expire(self._key(code), seconds)
        _log_start(code, hours)
        return code

    def publish(self, code: str, page: str, params: dict[str, str]) -> None:
        view, key = _checked_view(page, params), self._key(code)
        current = self.redis.hmget(key, "view", "ended")
        if current[0] is None or current[0].decode() == view or current[1] == b"1":
            return
        with self.redis.pipeline() as pipe:
            pipe.hset(key, "view", view)
            pipe.hincrby(key, "version", 1)
            pipe.execute()

    def view(self, code: str, follower: str | None = None) -> ClassView | None:
        if not is_class_code(code):
            return None
        version, view, expires, ended = self.redis.hmget(
            self._key(code), "version", "view", "expires", "ended"
        )
        if view is None:
            return None
        if follower is not None:
            self.still_here(code, [follower])
        shown = json.loads(view)
        return ClassView(int(version), shown["page"], shown["params"], float(expires), ended == b"1")

    def still_here(self, code: str, followers: list[str]) -> None:
        key, now = self._key(code, "followers"), time.time()
        if not followers:
            return
        with self.redis.pipeline() as pipe:
            pipe.zadd(key, dict.fromkeys(followers, now))
            pipe.zremrangebyscore(key, 0, now - FOLLOWING_SECONDS)
            pipe.expire(key, 86400)
            pipe.execute()

    def following(self, code: str) -> int:
        return int(self.redis.zcount(self._key(code, "followers"), time.time() - FOLLOWING_SECONDS, "+inf"))

    def end(self, code: str) -> None:
        self.redis.hset(self._key(code), "ended", 1)
        _log_end(code)


def open_class_sessions() -> ClassSessions:
    """Redis where ATTENTION_LAB_REDIS_URL is set (several hosts), else the runs folder's SQLite."""
    url = settings.redis_url()
    return RedisClassSessions(url) if url else SQLiteClassSessions()
