"""Helpers for tests that start `attention-lab serve` (nginx in front of app processes),
through deploy/serve.sh or the console command: free loopback ports, the processes a test
started, and what nginx answers."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import websockets

import attention_lab
from attention_lab.frame.streamlit_private import HEALTH, STREAM, BackMsg, ForwardMsg
from attention_lab.testing.servers import descendants, free_port  # noqa: F401 (tests import free_port here)

ROOT = Path(__file__).resolve().parents[2]
SERVE = ROOT / "deploy" / "serve.sh"
READY = re.compile(r"Attention Lab is ready: (http://\S+)")
T = TypeVar("T")
ROUTE = "attention_lab_route"
BASH = shutil.which("bash") or "/bin/bash"
#: The installed package's router script, which every app process runs.
HOME = Path(attention_lab.__file__).parent / "Home.py"


def console_command() -> list[str]:
    """The installed `attention-lab` console script, beside this interpreter's other scripts."""
    script = Path(sysconfig.get_path("scripts")) / "attention-lab"
    if script.is_file():
        return [str(script)]
    found = shutil.which("attention-lab")
    assert found, f"attention-lab is not installed for {sys.executable} (pip install -e .)"
    return [found]


def in_own_loop(coro: Coroutine[Any, Any, T]) -> T:
    """asyncio.run in a fresh thread: the shared Playwright browser keeps a loop on this one."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def process_tree(pid: int) -> set[int]:
    """pid and every process below it, from /proc."""
    return set(descendants(pid))


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


def start_serve(
    run_dir: Path,
    env: dict[str, str],
    workers: int = 2,
    args: tuple[str, ...] = (),
    command: list[str] | None = None,
    cwd: Path = ROOT,
) -> Served:
    """`command` (default: bash deploy/serve.sh) --workers N on a free port with `env` (and
    more `args`), from `cwd`; returns once it printed its URL."""
    command = command or [BASH, str(SERVE)]
    proc = subprocess.Popen(
        [*command, "--workers", str(workers), "--port", str(free_port()), "--run-dir", str(run_dir), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    output: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 240
    url = None
    for line in proc.stdout:  # the URL comes once nginx and every app process are healthy
        output.append(line)
        if match := READY.search(line):
            url = match.group(1).rstrip("/")
            break
        if time.monotonic() > deadline:
            break
    if url is None:
        proc.terminate()  # SIGTERM: it stops the app processes and nginx it started (SIGKILL would not)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        raise RuntimeError(f"{command} did not get ready:\n" + "".join(output) + proc.stdout.read())
    return Served(proc, url, run_dir, output)


@contextlib.contextmanager
def serving(
    run_dir: Path, workers: int = 2, command: list[str] | None = None, cwd: Path = ROOT
) -> Iterator[Served]:
    """`command` (default: bash deploy/serve.sh) --workers N on CPU with its runs under
    `run_dir`, stopped when the block ends."""
    env = {**os.environ, "ATTENTION_LAB_DEVICE": "cpu", "ATTENTION_LAB_RUNS_DIR": str(run_dir / "runs")}
    served = start_serve(run_dir, env, workers, command=command, cwd=cwd)
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
    return get(url + HEALTH, cookie)[1]["X-Upstream"]


def get(url: str, cookie: str | None = None) -> tuple[int, dict[str, str], list[str]]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()
        return response.status, dict(response.headers), response.headers.get_all("Set-Cookie") or []


async def streamlit_session(url: str, cookie: str, link: str) -> tuple[str | None, list[str], int]:
    """Open a websocket session through nginx and run the page at `link`, as a browser
    does. Returns (X-Upstream of the handshake, exceptions drawn, elements drawn)."""
    host = url.removeprefix("http://")
    path, _, query = link.partition("?")
    async with websockets.connect(
        f"ws://{host}{STREAM}",
        subprotocols=[websockets.Subprotocol("streamlit")],
        origin=websockets.Origin(url),
        additional_headers={"Cookie": cookie},
        max_size=None,
    ) as ws:
        upstream = ws.response.headers.get("X-Upstream")
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = path.strip("/")
        await ws.send(msg.SerializeToString())
        exceptions, elements = [], 0
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await asyncio.wait_for(ws.recv(), 120))
            kind = fwd.WhichOneof("type")
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                elements += 1
                if fwd.delta.new_element.WhichOneof("type") == "exception":
                    exceptions.append(fwd.delta.new_element.exception.message)
            if kind == "page_not_found":
                raise AssertionError(f"page not found: {link}")
            if kind == "script_finished" and fwd.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                return upstream, exceptions, elements


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    """(sample name, sorted labels) -> value of every sample a Prometheus exporter serves."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
