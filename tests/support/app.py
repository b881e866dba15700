"""The real app (`streamlit run app/Home.py`) on a free loopback port, for browser tests."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.browser import ROOT
from tests.support.serve import free_port


@contextmanager
def running_app(
    folder: Path,
    env: dict[str, str] | None = None,
    *,
    root: Path = ROOT,
    script: str | Path = "app/Home.py",
    python_path: str = "",
    args: tuple[str, ...] = (),
) -> Iterator[str]:
    """Start `script` of the checkout at `root` (its packages first on the path, then
    `python_path`) on CPU, its runs and log under `folder`, `env` on top (e.g. STREAMLIT_THEME_*
    settings) and `args` (Streamlit options, e.g. --secrets.files) on top; yield its URL once
    healthy; stop exactly that process."""
    port = free_port()
    log = folder / "streamlit.log"
    runs = folder / "runs"  # trained runs, not <repo>/runs
    runs.mkdir(exist_ok=True)
    full_env = {**os.environ, "ATTENTION_LAB_DEVICE": "cpu", "ATTENTION_LAB_RUNS_DIR": str(runs)}
    full_env.update({"PYTHONPATH": os.pathsep.join(filter(None, [str(root), python_path])), **(env or {})})
    command = [
        sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
        "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none", *args,
    ]  # fmt: skip
    with open(log, "w") as out:
        proc = subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT, env=full_env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"streamlit exited: {log.read_text()}") from None
                if time.time() > deadline:
                    raise RuntimeError(f"streamlit did not start: {log.read_text()}") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
