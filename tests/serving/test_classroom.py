"""Class sessions box-wide (serving.classroom): on the runs folder's SQLite, shared by two
store objects standing for two app processes, and on a real redis-server for several hosts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from attention_lab.serving import classroom
from attention_lab.serving.classroom import (
    ClassSessions,
    RedisClassSessions,
    SQLiteClassSessions,
    is_class_code,
)
from tests.support.redis_server import RedisServer
from tests.support.serve import free_port


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("class-redis")
    server = RedisServer(free_port(), folder)
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def two_processes(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[ClassSessions, ClassSessions]:
    """Two store objects on one box-wide store: what two app processes (or hosts) hold."""
    if request.param == "sqlite":
        return SQLiteClassSessions(tmp_path), SQLiteClassSessions(tmp_path)
    url = request.getfixturevalue("redis_url")
    return RedisClassSessions(url), RedisClassSessions(url)


def test_a_code_is_96_random_bits_and_nothing_else_is_one() -> None:
    codes = {classroom.new_class_code() for _ in range(1000)}
    assert len(codes) == 1000 and all(is_class_code(c) and len(c) == 16 for c in codes)  # 16 x 6 bits
    for bad in ("", "short", "a" * 17, "../../etc/passw", "ZnYjJmKQV-K3heR!", "x" * 10_000):
        assert not is_class_code(bad)


def test_a_lecturers_view_reaches_a_follower_on_the_other_process(two_processes) -> None:
    lecturer, follower = two_processes
    code = lecturer.start(hours=2)
    first = follower.view(code)
    assert first is not None and (first.version, first.page, first.params) == (0, "", {})
    assert not first.ended and first.expires == pytest.approx(time.time() + 7200, abs=5)

    lecturer.publish(code, "reversal", {"text": "attention", "layer": "1", "head": "2"})
    seen = follower.view(code)
    assert seen is not None and (seen.version, seen.page) == (1, "reversal")
    assert seen.params == {"text": "attention", "layer": "1", "head": "2"}
    lecturer.publish(code, "reversal", {"text": "attention", "layer": "1", "head": "2"})  # the same view
    assert follower.view(code).version == 1  # type: ignore[union-attr]  (no change: followers stay put)
    lecturer.publish(code, "gpt", {})
    assert (follower.view(code).version, follower.view(code).page) == (2, "gpt")  # type: ignore[union-attr]

    assert lecturer.following(code) == 0
    for who in ("student-a", "student-b", "student-a"):
        follower.view(code, who)
    assert lecturer.following(code) == 2  # each follower once

    lecturer.end(code)
    ended = follower.view(code)
    assert ended is not None and ended.ended
    lecturer.publish(code, "heads", {})  # after the end nothing moves
    assert follower.view(code).version == 2  # type: ignore[union-attr]


def test_a_process_says_its_whole_class_is_there_at_once(two_processes, monkeypatch) -> None:
    lecturer, process = two_processes
    code, other = lecturer.start(hours=1), lecturer.start(hours=1)
    process.still_here(code, [f"student-{k}" for k in range(150)])
    process.still_here(code, ["student-0", "student-150"])  # again, and one more
    process.still_here(other, ["student-0"])
    assert (lecturer.following(code), lecturer.following(other)) == (151, 1)
    process.still_here(code, [])  # nobody: no error, nobody added
    assert lecturer.following(code) == 151
    later = time.time() + classroom.FOLLOWING_SECONDS + 1
    monkeypatch.setattr(classroom.time, "time", lambda: later)
    process.still_here(code, ["student-7"])  # the others have not been heard of for too long
    assert lecturer.following(code) == 1


def test_unknown_codes_and_oversized_views(two_processes) -> None:
    lecturer, follower = two_processes
    assert follower.view("ZnYjJmKQV-K3heRx") is None  # well formed, never started
    assert follower.view("not a code") is None
    code = lecturer.start(hours=1e-6)  # expires 4 ms later
    time.sleep(0.01)
    expired = follower.view(code)
    assert expired is not None and expired.expires < time.time()
    with pytest.raises(ValueError, match="too large"):
        lecturer.publish(code, "gpt", {"text": "x" * 20_000})
