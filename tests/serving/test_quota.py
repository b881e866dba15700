"""Runs belong to people: each run store records its owner, lists a person's runs ("my
runs") and holds each person to their limits (runs at once, uploaded corpora, disk), on the
runs folder's SQLite and on a real redis-server. No run trains here: runs stay queued."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from attention_lab.serving.ids import RunError
from attention_lab.serving.quota import PersonLimits, PersonUsage, check_person
from attention_lab.serving.redis_store import RedisRunStore
from attention_lab.serving.request import RunRequest
from attention_lab.serving.sqlite_store import DB_FILE, SQLiteRunStore
from attention_lab.serving.store import RunStore
from tests.support.redis_server import RedisServer
from tests.support.serve import free_port

CORPUS = "the cat sat on the mat. " * 40  # 960 characters


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(free_port(), tmp_path_factory.mktemp("quota-redis"))
    server.start()
    yield server.url
    server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> RunStore:
    if request.param == "sqlite":
        return SQLiteRunStore(tmp_path / "runs", max_running=1, spawn=False)
    url = request.getfixturevalue("redis_url")
    RedisRunStore(url).redis.flushdb()
    return RedisRunStore(url, tmp_path / "runs")


def run(owner: str, label: str = "run", task: str = "reverse") -> RunRequest:
    train = dict(task=task, steps=100, batch_size=4, device="cpu", eval_every=0)
    return RunRequest(train=train, positions="none", size="tiny", label=label, owner=owner)


def test_runs_at_once_per_person_and_my_runs(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_PER_PERSON", "2")
    first = store.submit(run("alice@uni.edu", "first"))
    second = store.submit(run("alice@uni.edu", "second"))
    with pytest.raises(
        RunError, match=r"You already have 2 run\(s\) waiting or training; the limit per person is 2"
    ):
        store.submit(run("alice@uni.edu", "third"))
    bob = store.submit(run("bob@uni.edu", "bob's"))  # another person is not held by alice's runs
    script = store.submit(run("", "a script's"))  # no owner (a script): only the box's limits
    assert [(r.id, r.label, r.owner) for r in store.runs_of("alice@uni.edu", 10)] == [
        (second, "second", "alice@uni.edu"),
        (first, "first", "alice@uni.edu"),
    ]  # newest first
    assert [r.id for r in store.runs_of("bob@uni.edu", 10)] == [bob]
    assert store.runs_of("", 10) == [] and store.info(script).owner == ""
    assert store.info(bob).owner == "bob@uni.edu"
    assert store.usage("alice@uni.edu").active == 2
    store.stop(second)  # a waiting run is cancelled at once: alice may start another
    assert store.usage("alice@uni.edu").active == 1
    third = store.submit(run("alice@uni.edu", "third"))
    assert [r.label for r in store.runs_of("alice@uni.edu", 2)] == ["third", "second"]  # `latest`
    assert {r.owner for r in store.overview(20)[1]} >= {"alice@uni.edu", "bob@uni.edu"}
    assert store.info(third).owner == "alice@uni.edu"


def test_uploaded_corpora_per_person(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_PER_PERSON", "5")
    monkeypatch.setenv("ATTENTION_LAB_UPLOADS_PER_PERSON", "1")
    store.submit(run("carol@uni.edu", "upload", task="lm"), CORPUS)
    assert store.usage("carol@uni.edu").uploads == 1
    with pytest.raises(RunError, match="You keep 1 run\\(s\\) trained on an uploaded corpus; the limit per"):
        store.submit(run("carol@uni.edu", "another upload", task="lm"), CORPUS)
    store.submit(run("carol@uni.edu", "built-in corpus", task="lm"))  # no upload: allowed
    assert store.usage("carol@uni.edu") == PersonUsage(
        active=2, uploads=1, bytes=store.usage("carol@uni.edu").bytes
    )


def test_disk_per_person(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_PER_PERSON", "5")
    monkeypatch.setenv("ATTENTION_LAB_DISK_PER_PERSON_MB", str(500 / 2**20))  # 500 bytes
    store.submit(run("dan@uni.edu", "upload", task="lm"), CORPUS)
    used = store.usage("dan@uni.edu").bytes
    assert used >= len(CORPUS)  # the corpus waits on disk (or in Redis) with its run
    with pytest.raises(RunError, match=r"Your runs use 0\.0 MB of disk; the limit per person is 0 MB"):
        store.submit(run("dan@uni.edu", "more"))
    store.submit(run("erin@uni.edu", "someone else's"))  # erin holds nothing yet


def test_the_limits_name_the_settings_and_bad_values_are_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    limits = PersonLimits(runs=3, uploads=2, bytes=10 * 2**20)
    check_person(PersonUsage(active=2, uploads=1, bytes=2**20), limits, uploading=True)  # under every limit
    with pytest.raises(RunError, match="ATTENTION_LAB_UPLOADS_PER_PERSON"):
        check_person(PersonUsage(active=0, uploads=2, bytes=0), limits, uploading=True)
    check_person(PersonUsage(active=0, uploads=2, bytes=0), limits, uploading=False)  # no upload: fine
    with pytest.raises(RunError, match=r"Your runs use 10\.0 MB of disk; the limit per person is 10 MB"):
        check_person(PersonUsage(active=0, uploads=0, bytes=10 * 2**20), limits, uploading=False)
    monkeypatch.setenv("ATTENTION_LAB_RUNS_PER_PERSON", "two")
    with pytest.raises(Exception, match="ATTENTION_LAB_RUNS_PER_PERSON: 'two' is not a whole number"):
        PersonLimits.from_settings()
    monkeypatch.setenv("ATTENTION_LAB_RUNS_PER_PERSON", "0")
    with pytest.raises(Exception, match="ATTENTION_LAB_RUNS_PER_PERSON: must be >= 1, got 0"):
        PersonLimits.from_settings()


def test_a_queue_from_before_owners_gains_the_column_and_keeps_its_runs(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    root.mkdir()
    with sqlite3.connect(root / DB_FILE) as db:  # the schema before runs had owners
        db.execute(
            "CREATE TABLE runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, "
            "label TEXT NOT NULL, task TEXT NOT NULL, status TEXT NOT NULL, created REAL NOT NULL, "
            "started REAL, finished REAL, heartbeat REAL, host TEXT, pid INTEGER, error TEXT)"
        )
        db.execute(
            "INSERT INTO runs (id, label, task, status, created) VALUES "
            "('run-0123456789abcdef0123456789abcdef', 'old', 'reverse', 'done', 1.0)"
        )
    store = SQLiteRunStore(root, max_running=1, spawn=False)
    old = store.info("run-0123456789abcdef0123456789abcdef")
    assert old is not None and (old.label, old.status, old.owner) == ("old", "done", "")
    new = store.submit(run("alice@uni.edu"))
    assert store.info(new).owner == "alice@uni.edu"


def test_submits_at_the_same_instant_never_pass_a_persons_limit(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight tabs of one person press Start together with a limit of 2: exactly two runs are
    accepted (the check and the insert are one step; before, all eight could pass the check)."""
    monkeypatch.setenv("ATTENTION_LAB_RUNS_PER_PERSON", "2")
    start = threading.Barrier(8)
    accepted, refused = [], []

    def press_start(k: int) -> None:
        start.wait()
        try:
            accepted.append(store.submit(run("dave@uni.edu", f"tab {k}")))
        except RunError as e:
            refused.append(str(e))

    tabs = [threading.Thread(target=press_start, args=(k,)) for k in range(8)]
    for tab in tabs:
        tab.start()
    for tab in tabs:
        tab.join()
    assert len(accepted) == 2 and len(refused) == 6, refused
    assert all("the limit per person is 2" in r for r in refused)
    assert sorted(r.id for r in store.runs_of("dave@uni.edu", 10)) == sorted(accepted)
    assert {p.name for p in store.root.iterdir() if p.is_dir()} <= set(accepted)  # no refused run's folder
