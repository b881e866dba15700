"""The admin's figures as Prometheus metrics: `python -m serving.metrics` on a free
loopback port, scraped over HTTP, agrees with the run store, the runs folder and the
box-wide page counts; the page counter's totals only grow and its rates are per minute."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from attention_lab.serving import RunRequest
from attention_lab.serving.admin import collect
from attention_lab.serving.page_stats import KEEP_MINUTES, RATE_MINUTES, PageCounter
from attention_lab.serving.progress import note_gpu_memory, summary
from attention_lab.serving.sqlite_store import SQLiteRunStore
from tests.support.serve import free_port, scrape
from transformer_core.device import memory_in_use

ROOT = Path(__file__).resolve().parents[2]


def request(label: str) -> RunRequest:
    train = dict(task="reverse", steps=300, batch_size=4, device="cpu", eval_every=0)
    return RunRequest(train=train, positions="none", size="tiny", label=label)


def test_the_exporter_serves_the_stores_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "runs"
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(root))
    monkeypatch.setenv("ATTENTION_LAB_RUNS_MAX_MB", "2.5")
    store = SQLiteRunStore(max_running=1, spawn=False)
    first, second, third = (store.submit(request(f"run {n}")) for n in range(3))
    store.mark_running(first, 4242)
    store.finish(third, "failed", "test")  # (never started: only its status matters here)
    note_gpu_memory(store.folder(first), 123_456_789)
    counter = PageCounter(root)
    for n in range(7):
        counter.record(error=n == 3)

    port = free_port()
    env = {"ATTENTION_LAB_RUNS_DIR": str(root), "ATTENTION_LAB_RUNS_MAX_MB": "2.5", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "attention_lab.serving.metrics", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # printed once it listens
        assert line.strip() == f"attention_lab.serving.metrics: http://127.0.0.1:{port}/metrics", line
        found = scrape(f"http://127.0.0.1:{port}/metrics")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    runs = {dict(labels)["status"]: v for (name, labels), v in found.items() if name == "attention_lab_runs"}
    assert runs == {
        "queued": 1,
        "starting": 0,
        "running": 1,
        "done": 0,
        "stopped": 0,
        "failed": 1,
        "evicted": 0,
    }
    assert found["attention_lab_runs_disk_bytes", ()] == store.disk_bytes() > 0
    assert found["attention_lab_runs_disk_budget_bytes", ()] == 2.5 * 2**20
    assert found["attention_lab_page_runs_total", ()] == 7
    assert found["attention_lab_page_errors_total", ()] == 1
    assert found["attention_lab_page_runs_per_minute", ()] == pytest.approx(7 / RATE_MINUTES)
    gpu = {
        dict(labels)["run"]: v
        for (name, labels), v in found.items()
        if name == "attention_lab_gpu_memory_bytes"
    }
    assert gpu == {first: 123_456_789}  # the run's own note (written by its process on a GPU)


def test_the_page_figures_fold_old_minutes_and_keep_their_totals(tmp_path: Path) -> None:
    counter = PageCounter(tmp_path)
    now = 1_000_000_000.0
    counter.record(now=now - (KEEP_MINUTES + 10) * 60)
    counter.record(now=now - (KEEP_MINUTES + 5) * 60, error=True)
    for _ in range(10):
        counter.record(now=now - 30)
    figures = counter.figures(now=now)
    assert (figures.runs_total, figures.errors_total) == (12, 1)
    assert figures.runs_per_minute == 10 / RATE_MINUTES and figures.errors_per_minute == 0
    rows = counter._db.execute("SELECT minute FROM minutes ORDER BY minute").fetchall()
    assert [m for (m,) in rows][0] == 0 and len(rows) == 2  # the old minutes are one row now
    assert counter.figures(now=now) == figures  # folding again changes nothing
    assert [p.pid for p in figures.processes] == [os.getpid()]  # this process, seen 30 s ago
    assert counter.figures(now=now + 3600).processes == ()  # not seen for an hour: not listed


def test_the_figures_on_cpu_and_a_runs_progress_summary(tmp_path: Path) -> None:
    store = SQLiteRunStore(tmp_path / "runs", max_running=1, spawn=False)
    run = store.submit(request("only"))
    figures = collect(store, PageCounter(tmp_path / "runs"))
    assert figures.gpu == torch.cuda.is_available()
    assert memory_in_use(torch.device("cpu")) is None  # a CPU has nothing to report
    assert [r.info.id for r in figures.runs] == [run] and figures.runs[0].progress == summary(
        store.folder(run)
    )
    assert figures.runs[0].progress.gpu_bytes is None and figures.counts["starting"] == 1
    assert time.time() - figures.runs[0].info.created < 60
