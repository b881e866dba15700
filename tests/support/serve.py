"""Helpers for tests that start deploy/serve.sh (nginx in front of app processes): free
loopback ports, the processes a test started, and what nginx answers."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "deploy" / "serve.sh"
READY = re.compile(r"Attention Lab is ready: (http://\S+)")
T = TypeVar("T")
ROUTE = "attention_lab_route"
BASH = shutil.which("bash") or "/bin/bash"


def in_own_loop(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run in a fresh thread: the shared Playwright browser keeps a loop on this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree(pid: int) -> set[int]:
    """pid and every process below it, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        todo.extend(children.get(p, []))
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@dataclass
class Served:
    proc: subprocess.Popen[str]
    url: str
    run_dir: Path
    output: list[str]


def start_serve(run_dir: Path, env: dict[str, str], workers: int = 2) -> Served:
    """serve.sh --workers N on a free port with `env`; returns once it printed its URL."""
    proc = subprocess.Popen(
        [BASH, str(SERVE), "--workers", str(workers), "--port", str(free_port()), "--run-dir", str(run_dir)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    output: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 240
    url = None
    for line in proc.stdout:  # serve.sh prints the URL once nginx and both workers are healthy
        output.append(line)
        if match := READY.search(line):
            url = match.group(1).rstrip("/")
            break
        if time.monotonic() > deadline:
            break
    if url is None:
        proc.kill()
        raise RuntimeError("serve.sh did not get ready:\n" + "".join(output) + proc.stdout.read())
    return Served(proc, url, run_dir, output)


@contextlib.contextmanager
def serving(run_dir: Path, workers: int = 2) -> Iterator[Served]:
    """serve.sh --workers N on CPU with its runs under `run_dir`, stopped when the block ends."""
    env = {**os.environ, "ATTENTION_LAB_DEVICE": "cpu", "ATTENTION_LAB_RUNS_DIR": str(run_dir / "runs")}
    served = start_serve(run_dir, env, workers)
    try:
        yield served
    finally:
        stop_serve(served)


def stop_serve(served: Served) -> None:
    if served.proc.poll() is None:
        served.proc.terminate()
        served.proc.wait(timeout=30)


def upstream_of(url: str, cookie: str) -> str:
    """The app process (127.0.0.1:port) nginx sends a browser with this route cookie to."""
    return get(url + "/_stcore/health", cookie)[1]["X-Upstream"]


def get(url: str, cookie: str | None = None) -> tuple[int, dict[str, str], list[str]]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
        return response.status, dict(response.headers), response.headers.get_all("Set-Cookie") or []
