"""Browser fixtures: the real app on a free loopback port, driven by headless Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page

from tests.support.browser import ROOT
from tests.support.serve import free_port


@pytest.fixture(scope="session")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    env = {**os.environ, "ATTENTION_LAB_DEVICE": "cpu", "PYTHONPATH": str(ROOT)}
    env["ATTENTION_LAB_RUNS_DIR"] = str(tmp_path_factory.mktemp("runs"))  # trained runs, not <repo>/runs
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                "app/Home.py",
                "--server.headless",
                "true",
                "--server.port",
                str(port),
                "--server.address",
                "127.0.0.1",
                "--browser.gatherUsageStats",
                "false",
                "--server.fileWatcherType",
                "none",
            ],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"streamlit exited: {log.read_text()}") from None
                time.sleep(0.5)
        else:
            proc.kill()
            raise RuntimeError(f"streamlit did not start: {log.read_text()}")
        yield url
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    pg.screenshot(path=str(tmp_path / "final.png"), full_page=True)
    context.close()
