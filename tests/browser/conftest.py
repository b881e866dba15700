"""Browser fixtures: the real app on a free loopback port, driven by headless Chromium."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
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


def wait_for_app(page: Page, timeout: float = 90_000) -> None:
    """Wait until the script run has finished: a title is shown and no run is in progress."""
    idle = """() => {
        const main = document.querySelector('[data-testid="stMain"]');
        if (!main || !main.querySelector('h1')) return false;
        const s = document.querySelector('[data-testid="stStatusWidget"]');
        if (!s) return true;
        const t = s.innerText.toLowerCase();
        return !t.includes('stop') && !t.includes('running');
    }"""
    page.wait_for_function(idle, timeout=timeout)
    page.wait_for_timeout(700)  # a rerun may start right after (query params, fragments)
    page.wait_for_function(idle, timeout=timeout)


def assert_no_exception(page: Page) -> None:
    """Fail on any exception element or error box Streamlit shows on the page."""
    exceptions = page.locator('[data-testid="stException"]')
    if exceptions.count():
        raise AssertionError(f"exception on page: {exceptions.first.inner_text()[:2000]}")


def open_page(page: Page, url: str, shot: Path | None = None) -> None:
    page.goto(url)
    wait_for_app(page)
    assert_no_exception(page)
    if shot is not None:
        page.screenshot(path=str(shot), full_page=True)


# ---------------------------------------------------------------- the canvas charts (app/static/charts.js)


def chart(page: Page, key: str) -> Locator:
    """The drawn chart mounted under widget key `key` (Playwright's CSS pierces its shadow root)."""
    found = page.locator(f".st-key-{key} .lab-chart[data-drawn]")
    found.wait_for(timeout=30_000)
    return found


def chart_title(page: Page, key: str, has: str) -> None:
    """Wait (up to 20 s) until the chart's title holds `has`: a chart redraws just after the
    run that sent it, so the previous title can still be up when the run has finished."""
    expect(chart(page, key).locator("canvas")).to_have_attribute(
        "aria-label", re.compile(re.escape(has)), timeout=20_000
    )


def chart_legend(page: Page, key: str, entry: str) -> None:
    """Wait (up to 20 s) until the chart's legend lists `entry`."""
    expect(chart(page, key)).to_have_attribute(
        "data-legend", re.compile(re.escape(json.dumps(entry))), timeout=20_000
    )


def chart_cells(page: Page, key: str) -> list[list[int]]:
    """[layer, head, x, y, w, h] of every panel, in CSS pixels of the chart's canvas."""
    return json.loads(chart(page, key).get_attribute("data-cells") or "[]")
