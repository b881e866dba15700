"""The lab's log lines: each queue decision, run start, end and failure, eviction, quota refusal
and class session start/end says so in one line of a named logger, never with an input text
or a class session's code; the lab's loggers take Streamlit's level and format, and a run
process logs as the app process that spawned it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from attention_lab.serving import logs, run_process
from attention_lab.serving.classroom import SQLiteClassSessions, code_ref
from attention_lab.serving.ids import RunError
from attention_lab.serving.request import REQUEST_FILE, RunRequest
from attention_lab.serving.sqlite_store import SQLiteRunStore

CORPUS = "a private corpus nobody should find in a log. " * 20


@pytest.fixture
def caplog(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """Every INFO line of the lab's loggers, whatever level an earlier app run gave them."""
    caplog.set_level(logging.INFO, logger="attention_lab")
    return caplog


@pytest.fixture
def lab_loggers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The lab's loggers as they were, after a test that sets them up."""
    monkeypatch.setattr(logs, "_PASSED_DOWN", {})
    saved = [(logger, logger.level, list(logger.handlers)) for logger in map(logging.getLogger, logs.LOGGERS)]
    yield
    for logger, level, handlers in saved:
        logger.setLevel(level)
        logger.handlers[:] = handlers


def request(owner: str = "", steps: int = 100) -> RunRequest:
    train = dict(task="reverse", steps=steps, batch_size=4, device="cpu", eval_every=0)
    return RunRequest(train=train, positions="none", size="tiny", label="a run", owner=owner)


def lines(caplog: pytest.LogCaptureFixture, logger: str, level: int = logging.INFO) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger and r.levelno == level]


def test_submitting_at_the_cap_logs_each_queue_decision(tmp_path: Path, caplog) -> None:
    store = SQLiteRunStore(tmp_path / "runs", max_running=1, spawn=False)
    first = store.submit(request())
    second = store.submit(request(), corpus=CORPUS)
    decisions = lines(caplog, "attention_lab.serving.sqlite_store")
    assert decisions[0].startswith(f"run {first} starts now: a slot is free (0 of 1 busy)")
    assert decisions[1] == f"run {second} waits: all 1 slots are busy (place 1)"
    assert len(decisions) == 2  # one line a decision
    store.finish(first, "done")
    caplog.clear()
    assert store.dispatch() == [second]
    [started] = lines(caplog, "attention_lab.serving.sqlite_store")
    assert started.startswith(f"run {second} starts now: a slot is free (0 of 1 busy) after ")
    assert CORPUS[:20] not in caplog.text


def test_a_quota_refusal_logs_one_warning_naming_the_limit(
    tmp_path: Path, caplog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTENTION_LAB_UPLOADS_PER_PERSON", "1")
    monkeypatch.setenv("ATTENTION_LAB_RUNS_PER_PERSON", "10")
    store = SQLiteRunStore(tmp_path / "runs", max_running=4, spawn=False)
    store.submit(request("alice@uni.edu"), corpus=CORPUS)
    store.submit(request("alice@uni.edu"))  # a built-in corpus: not held by the uploads limit
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    with pytest.raises(RunError, match="uploaded corpus"):
        store.submit(request("alice@uni.edu"), corpus=CORPUS)
    [refusal] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert refusal.name == "attention_lab.serving.quota" and refusal.levelno == logging.WARNING
    assert "alice@uni.edu" in refusal.getMessage()
    assert "ATTENTION_LAB_UPLOADS_PER_PERSON reached" in refusal.getMessage()
    assert CORPUS[:20] not in caplog.text


def test_a_class_session_logs_its_start_and_end_but_never_its_code(tmp_path: Path, caplog) -> None:
    sessions = SQLiteClassSessions(tmp_path)
    code = sessions.start(hours=2)
    sessions.end(code)
    said = lines(caplog, "attention_lab.serving.classroom")
    assert said == [
        f"class session {code_ref(code)} started, open for 2 h",
        f"class session {code_ref(code)} ended by its lecturer",
    ]
    assert code not in caplog.text and code_ref(code) != code_ref(sessions.start(hours=1))


def test_a_failed_run_logs_why(tmp_path: Path, caplog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUN_NICE", "0")
    store = SQLiteRunStore(tmp_path / "runs", max_running=1, spawn=False)
    run_id = store.submit(request())
    (store.folder(run_id) / REQUEST_FILE).write_text("{not json")
    assert run_process.execute(store, run_id) == "failed"
    [failure] = lines(caplog, "attention_lab.serving.run_process", logging.WARNING)
    assert failure.startswith(f"run {run_id} failed: ") and "request.json is unreadable" in failure


def test_a_dead_run_process_and_an_eviction_are_logged(tmp_path: Path, caplog) -> None:
    store = SQLiteRunStore(tmp_path / "runs", max_running=1, spawn=False, max_bytes=2**20)
    dead = store.submit(request())
    store.mark_running(dead, 2**22 + 1)  # a pid no process of this host has
    store.dispatch()
    [failure] = lines(caplog, "attention_lab.serving.sqlite_store", logging.WARNING)
    assert failure == f"run {dead} failed: its process {2**22 + 1} is gone"
    (store.folder(dead) / "weights.bin").write_bytes(b"\0" * 2**21)
    assert store.enforce_disk_budget() == [dead]
    [eviction] = [m for m in lines(caplog, "attention_lab.serving.sqlite_store") if "evicted" in m]
    assert eviction.startswith(f"run {dead} evicted (folder {store.folder(dead)} deleted): ")
    assert "over the 1 MB budget" in eviction


def test_the_lab_loggers_follow_streamlits_level_and_format(
    lab_loggers: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import streamlit as st

    options = {"logger.level": "warning", "logger.messageFormat": "%(levelname)s %(name)s|%(message)s"}
    monkeypatch.setattr(st, "get_option", options.__getitem__)
    logs.app_logging.__wrapped__()
    logs.app_logging.__wrapped__()  # set up twice: still one handler a logger
    for name in logs.LOGGERS:
        assert logging.getLogger(name).level == logging.WARNING
        assert sum(isinstance(h, logs.StderrHandler) for h in logging.getLogger(name).handlers) == 1
    logging.getLogger("attention_lab.serving.quota").info("below the level")
    logging.getLogger("attention_lab.serving.quota").warning("shown")
    assert capsys.readouterr().err == "WARNING attention_lab.serving.quota|shown\n"
    assert logs.child_env() == {
        "STREAMLIT_LOGGER_LEVEL": "warning",
        "STREAMLIT_LOGGER_MESSAGE_FORMAT": "%(levelname)s %(name)s|%(message)s",
    }


def test_a_run_process_logs_its_start_and_end_as_its_app_process_does(
    tmp_path: Path, lab_loggers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATTENTION_LAB_RUN_NICE", "0")
    monkeypatch.delenv("STREAMLIT_LOGGER_LEVEL", raising=False)
    logs.install("info", "LAB %(levelname)s %(name)s: %(message)s")  # what app_logging would give
    store = SQLiteRunStore(tmp_path / "runs", max_running=1)
    run_id = store.submit(request(steps=3))
    deadline = time.monotonic() + 120
    while (info := store.info(run_id)) is None or info.active:
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.1)
    assert info.status == "done", info.error
    log = (store.folder(run_id) / "run.log").read_text()
    assert f"LAB INFO attention_lab.serving.run_process: run {run_id} started: reverse, 3 steps on cpu" in log
    assert f"LAB INFO attention_lab.serving.run_process: run {run_id} done: 3 steps in " in log
