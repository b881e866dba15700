"""Many simultaneous users on one box: one Streamlit process vs deploy/serve.sh (nginx + N).

    python benchmarks/bench_load.py                                  # both targets, 1/5/20 users
    python benchmarks/bench_load.py --target serve --workers 2 --users 1,5,20,50 --duration 30
    python benchmarks/bench_load.py --target single --trainings 2    # with two trainings watched
    python benchmarks/bench_load.py --target serve --soak 600 --soak-users 20   # memory over time
    python benchmarks/bench_load.py --url http://127.0.0.1:8501      # a server already running
    python benchmarks/bench_load.py --target serve --redis-workers 2 --trainings 3   # Redis queue, 2 workers
    python benchmarks/bench_load.py --chaos --workers 2 --users 20   # kill -9 an app process (bench_chaos.py)

Each simulated user is one browser speaking Streamlit's own protocol: it opens a deep link
as a new tab does - GET the page's HTML (keeping the cookies nginx sets, so it stays on one
app process), open the websocket /_stcore/stream, send a rerun_script BackMsg with the
page's url path and query string - and reads ForwardMsgs until script_finished. That
script run is what a page costs the server; the static JavaScript bundles a browser also
fetches once (and then caches) are not requested. Users loop over the deep links with no
think time (a closed loop: every user always has a page in flight), so `users` is the
number of page opens in flight at once. 60 students opening one link within a minute is
about one page open per second.

Printed per target and user count: pages run, p50/p95/max page time (HTML request to
script_finished), page runs/s, exceptions (Exception elements drawn on a page), errors
(HTTP errors, closed websockets, runs over --page-timeout), and the resident memory of
every process of the server (sum of RSS; for serve.sh: the app processes + nginx + the
script) before and after the step, and procs: how many app processes served the step
(from nginx's X-Upstream header; "-" without nginx). Every step is bounded by --duration seconds and
--max-pages page opens per user; the whole run starts and stops its own servers on free
loopback ports. Before measuring, every app process opens every deep link once (warm-up:
model loads and first compiles are not in the figures).

--trainings K starts K trainings on /train first (K sessions press Start, over the same
protocol), keeps those K sessions open and watching (they answer the page's auto-rerun
requests, as an open browser tab does) during every step, and reports how many training
steps the K runs advanced while each step ran. Trainings run in the box-wide queue's own
run processes (not in the RSS column). Servers started here get a temporary
ATTENTION_LAB_RUNS_DIR, and every training started here is stopped (Stop button, then the
queue) before the script ends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import ClientConnection, connect

ROOT = Path(__file__).resolve().parents[1]

#: the deep links a lecturer posts (README "Pages"; USERS.md walks 1 and 6)
DEEP_LINKS = [
    "/gpt?text=The%20with%20statement",
    "/reversal?text=attention",
    "/basics?heads=2",
    "/positions?d_model=64&length=50",
    "/variance?d_k=16",
    "/train",
    "/",
]
FINISHED_SUCCESSFULLY = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_SUCCESSFULLY")
FINISHED_WITH_COMPILE_ERROR = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_WITH_COMPILE_ERROR")
FINISHED_EARLY_FOR_RERUN = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_EARLY_FOR_RERUN")


class ProtocolError(RuntimeError):
    """The server answered something a browser could not use."""


# ---------------------------------------------------------------- one browser


@dataclass
class PageResult:
    seconds: float
    exceptions: list[str]
    upstream: str | None


@dataclass
class Browser:
    """One simulated browser: its cookies (the route cookie keeps it on one process)."""

    base: str
    cookies: dict[str, str] = field(default_factory=dict)

    @property
    def cookie_header(self) -> str:
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    def _keep_cookies(self, set_cookie_headers: list[str]) -> None:
        for header in set_cookie_headers:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0].strip()

    async def get(self, path: str, timeout: float) -> tuple[int, str | None]:
        """GET path (HTTP/1.1, one connection); keeps Set-Cookie. Returns status, X-Upstream."""
        parts = urlsplit(self.base)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        try:
            request = f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n"
            if self.cookies:
                request += f"Cookie: {self.cookie_header}\r\n"
            writer.write((request + "\r\n").encode("latin-1"))
            await writer.drain()
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers = [line.partition(":") for line in lines[1:] if line]
            self._keep_cookies([v.strip() for k, _, v in headers if k.lower() == "set-cookie"])
            upstream = next((v.strip() for k, _, v in headers if k.lower() == "x-upstream"), None)
            await asyncio.wait_for(reader.read(), timeout)  # the body, until the server closes
            return status, upstream
        finally:
            writer.close()

    def connect(self) -> connect:
        parts = urlsplit(self.base)
        headers = {"Cookie": self.cookie_header} if self.cookies else {}
        return connect(
            f"ws://{parts.netloc}/_stcore/stream",
            subprotocols=[websockets.Subprotocol("streamlit")],
            origin=websockets.Origin(f"{parts.scheme}://{parts.netloc}"),
            additional_headers=headers,
            max_size=None,
            open_timeout=30,
            ping_interval=None,
        )


def rerun_msg(
    link: str,
    widgets: list[tuple[str, bool]] = (),
    fragment_id: str = "",
    auto: bool = False,
    page_hash: str = "",
) -> bytes:
    """The BackMsg a browser sends to run the page at `link` (url path + query string).

    A new tab knows only the URL (page_name = url path); once the server has named the
    page (navigation.page_script_hash), the browser sends that hash with every rerun."""
    path, _, query = link.partition("?")
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = path.strip("/")
    msg.rerun_script.page_script_hash = page_hash
    if fragment_id:
        msg.rerun_script.fragment_id = fragment_id
        msg.rerun_script.is_auto_rerun = auto
    for widget_id, trigger in widgets:
        state = msg.rerun_script.widget_states.widgets.add()
        state.id = widget_id
        state.trigger_value = trigger
    return msg.SerializeToString()


@dataclass
class RunOutcome:
    exceptions: list[str] = field(default_factory=list)
    buttons: dict[str, tuple[str, bool]] = field(default_factory=dict)  # label -> (id, disabled)
    auto_reruns: dict[str, float] = field(default_factory=dict)  # fragment id -> interval
    texts: list[str] = field(default_factory=list)  # markdown bodies and progress-bar texts
    codes: list[str] = field(default_factory=list)  # st.code blocks
    text_inputs: dict[str, tuple[str, str]] = field(default_factory=dict)  # label -> (id, value shown)
    full_run: bool = False  # the whole page ran (not only a fragment)
    query_string: str | None = None  # the page changed its URL's query (st.query_params)
    page_hash: str = ""  # the page this session shows (navigation.page_script_hash)
    text_at: float = 0.0  # time.monotonic() when a text box's value last arrived


UPDATE_QUIET_SECONDS = 0.05  # elements sent outside a run: the update is over when none come this long


async def read_shown(ws: ClientConnection, timeout: float, first: bytes) -> RunOutcome:
    """What the server sent by itself, from its `first` message: a run (the push of a new view)
    read to its end, or changed elements sent outside a run (a mirror brought up to date,
    attention_lab.lecture.mirror.changes) read until UPDATE_QUIET_SECONDS pass without one."""
    msg = ForwardMsg()
    msg.ParseFromString(first)
    if msg.HasField("new_session"):
        return await read_run(ws, timeout, first=first)
    out = RunOutcome()
    data: bytes | None = first
    while data is not None:
        msg = ForwardMsg()
        msg.ParseFromString(data)
        if msg.HasField("new_session"):  # a run follows the update: read it into the same outcome
            return await read_run(ws, timeout, first=data, out=out)
        _note(out, msg)
        try:
            data = await asyncio.wait_for(ws.recv(), UPDATE_QUIET_SECONDS)
        except TimeoutError:
            data = None
    return out


def _note(out: RunOutcome, msg: ForwardMsg) -> str:
    """Keep in `out` what `msg` shows; its kind."""
    kind = msg.WhichOneof("type")
    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        element = msg.delta.new_element
        which = element.WhichOneof("type")
        if which == "exception":
            out.exceptions.append(f"{element.exception.type}: {element.exception.message}"[:300])
        elif which == "button":
            out.buttons[element.button.label] = (element.button.id, element.button.disabled)
        elif which == "markdown":
            out.texts.append(element.markdown.body)
        elif which == "progress":
            out.texts.append(element.progress.text)
        elif which == "code":
            out.codes.append(element.code.code_text)
        elif which == "text_input":
            box = element.text_input
            out.text_inputs[box.label] = (box.id, box.value if box.HasField("value") else box.default)
            out.text_at = time.monotonic()
    elif kind == "new_session":  # a run starts: the whole page, or only fragments
        out.full_run = out.full_run or not msg.metadata.run.fragment_ids
    elif kind == "navigation":  # st.navigation chose the page: the browser keeps its hash
        out.page_hash = msg.navigation.page_script_hash or out.page_hash
    elif kind == "page_info_changed":
        out.query_string = msg.page_info_changed.query_string
    elif kind == "auto_rerun":
        out.auto_reruns[msg.auto_rerun.fragment_id] = msg.auto_rerun.interval
    elif kind == "page_not_found":
        raise ProtocolError(f"page not found: {msg.page_not_found.page_name!r}")
    return kind or ""


async def read_run(
    ws: ClientConnection,
    timeout: float,
    fragment: bool = False,
    first: bytes | None = None,
    out: RunOutcome | None = None,
) -> RunOutcome:
    """Read ForwardMsgs until the script (or fragment) run finishes; collect what we need.
    first: the run's first message, already received (a run the server started by itself);
    out: an outcome to go on filling."""
    out, fragment_run = out or RunOutcome(), False
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no script_finished within {timeout:.0f} s")
        data = first if first is not None else await asyncio.wait_for(ws.recv(), remaining)
        first = None
        msg = ForwardMsg()
        msg.ParseFromString(data)
        kind = _note(out, msg)
        if kind == "new_session":  # a fragment run (a poll answered late) ends at its fragment's end
            fragment_run = bool(msg.metadata.run.fragment_ids)
        if kind == "script_finished":
            status = msg.script_finished
            if status == FINISHED_EARLY_FOR_RERUN:
                continue  # st.rerun(): the next run follows on the same session
            if status == FINISHED_WITH_COMPILE_ERROR:
                out.exceptions.append("compile error")
            if fragment or fragment_run or status in (FINISHED_SUCCESSFULLY, FINISHED_WITH_COMPILE_ERROR):
                return out


async def open_page(browser: Browser, link: str, timeout: float) -> PageResult:
    """Open `link` as a new tab does; the time from the HTML request to script_finished."""
    start = time.perf_counter()
    status, upstream = await browser.get(link, timeout)
    if status != 200:
        raise ProtocolError(f"GET {link}: HTTP {status}")
    async with browser.connect() as ws:
        upstream = ws.response.headers.get("X-Upstream", upstream)
        await ws.send(rerun_msg(link))
        outcome = await read_run(ws, timeout - (time.perf_counter() - start))
    return PageResult(time.perf_counter() - start, outcome.exceptions, upstream)


# ---------------------------------------------------------------- trainings being watched


@dataclass
class Watcher:
    """A /train tab that pressed Start and stays open, answering the page's auto-reruns.

    Like a browser it keeps the URL the page sets (the run's private link, ?run=ID) and
    sends it with every rerun. stop() presses the page's Stop button."""

    browser: Browser
    link: str = "/train"
    run_id: str | None = None
    steps: list[int] = field(default_factory=list)  # training steps seen on the page
    errors: list[str] = field(default_factory=list)
    finished: bool = False
    task: asyncio.Task[None] | None = None
    page_hash: str = ""
    _stop_id: str | None = None
    _ws: ClientConnection | None = None

    async def run(self, ready: asyncio.Event, timeout: float) -> None:
        try:
            await self.browser.get(self.link, timeout)
            async with self.browser.connect() as ws:
                self._ws = ws
                await ws.send(rerun_msg(self.link))
                first = self._note(await read_run(ws, timeout))
                if "Start" not in first.buttons:
                    raise ProtocolError(f"/train shows no Start button (buttons: {sorted(first.buttons)})")
                start_id, disabled = first.buttons["Start"]
                if disabled:
                    raise ProtocolError("/train: Start is disabled (a run is already active here)")
                await ws.send(rerun_msg(self.link, widgets=[(start_id, True)], page_hash=self.page_hash))
                outcome = self._note(await read_run(ws, timeout))
                if outcome.exceptions:
                    raise ProtocolError(f"/train after Start: {outcome.exceptions[0]}")
                if not outcome.auto_reruns:
                    raise ProtocolError("/train after Start: no live panel (no auto-rerun fragment)")
                ready.set()
                while True:  # as an open tab: rerun the live fragment at its interval
                    fragment_id, interval = next(iter(outcome.auto_reruns.items()))
                    await asyncio.sleep(interval)
                    await ws.send(
                        rerun_msg(self.link, fragment_id=fragment_id, auto=True, page_hash=self.page_hash)
                    )
                    fragment = self._note(await read_run(ws, timeout, fragment=True))
                    if fragment.exceptions:
                        self.errors.append(fragment.exceptions[0])
                    if fragment.full_run:  # the page redrew itself (st.rerun(scope="app"))
                        if not fragment.auto_reruns:
                            self.finished = True  # no live panel: the run has ended
                            await asyncio.Event().wait()  # the tab stays open, idle
                        outcome = fragment
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported, not hidden
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            ready.set()

    def _note(self, outcome: RunOutcome) -> RunOutcome:
        self.page_hash = outcome.page_hash or self.page_hash
        if outcome.query_string is not None:
            self.link = "/train" + (f"?{outcome.query_string}" if outcome.query_string else "")
            match = re.search(r"(?:^|&)run=([^&]+)", outcome.query_string)
            self.run_id = match.group(1) if match else self.run_id
        if "Stop" in outcome.buttons:
            self._stop_id = outcome.buttons["Stop"][0]
        for text in outcome.texts:
            match = re.search(r"\bstep ([\d,]+) /", text)
            if match:
                self.steps.append(int(match.group(1).replace(",", "")))
        return outcome

    async def stop(self, timeout: float) -> None:
        """Cancel the watching loop, then press Stop on a fresh connection of this browser."""
        if self.task:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self.finished or not self._stop_id:
            return
        try:
            async with self.browser.connect() as ws:
                await ws.send(rerun_msg(self.link, widgets=[(self._stop_id, True)], page_hash=self.page_hash))
                await read_run(ws, timeout)
        except Exception as exc:  # noqa: BLE001 - the server-side safety net follows
            print(f"    could not press Stop on /train: {exc}", flush=True)


async def start_trainings(base: str, count: int, timeout: float) -> list[Watcher]:
    watchers = []
    for i in range(count):
        watcher = Watcher(Browser(base, cookies={"attention_lab_route": f"training-{i}"}))
        ready = asyncio.Event()
        watcher.task = asyncio.create_task(watcher.run(ready, timeout))
        await ready.wait()
        if watcher.errors:
            raise ProtocolError(f"training {i + 1} did not start: {watcher.errors[0]}")
        watchers.append(watcher)
    return watchers


# ---------------------------------------------------------------- a load step


@dataclass
class StepResult:
    users: int
    times: list[float] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    upstreams: set[str] = field(default_factory=set)
    elapsed: float = 0.0
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0
    training_steps: int | None = None


async def load_step(
    base: str, users: int, duration: float, max_pages: int, page_timeout: float, server: Server | None
) -> StepResult:
    result = StepResult(users)
    result.rss_before_mb = server.rss_mb() if server else float("nan")
    stop_at = time.monotonic() + duration

    async def user(index: int) -> None:
        browser = Browser(base)
        links = itertools.islice(itertools.cycle(DEEP_LINKS), index, None)
        for _ in range(max_pages):
            if time.monotonic() >= stop_at:
                return
            link = next(links)
            try:
                page = await open_page(browser, link, page_timeout)
            except Exception as exc:  # noqa: BLE001 - counted and shown
                result.errors.append(f"{link}: {type(exc).__name__}: {exc}"[:300])
                continue
            result.times.append(page.seconds)
            result.exceptions.extend(f"{link}: {e}" for e in page.exceptions)
            if page.upstream:
                result.upstreams.add(page.upstream)

    started = time.perf_counter()
    await asyncio.gather(*(user(i) for i in range(users)))
    result.elapsed = time.perf_counter() - started
    result.rss_after_mb = server.rss_mb() if server else float("nan")
    return result


async def warm_up(base: str, workers: int, page_timeout: float) -> None:
    """Every app process opens every deep link once (model loads, first compiles)."""
    seen: set[str | None] = set()
    for attempt in range(16 * workers):
        browser = Browser(base, cookies={"attention_lab_route": f"warm-{attempt}"})
        _, upstream = await browser.get("/_stcore/health", page_timeout)
        if upstream in seen:
            continue
        seen.add(upstream)
        await asyncio.gather(*(open_page(browser, link, page_timeout) for link in DEEP_LINKS))
        if len(seen) >= workers:
            return


# ---------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid: int) -> list[int]:
    """pid and every process below it (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def is_training_worker(pid: int) -> bool:
    """A run's process (`python -m attention_lab.serving.run_process RUN_ID`)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"attention_lab.serving.run_process" in f.read()
    except OSError:
        return False


def rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@dataclass
class Server:
    name: str
    base: str
    workers: int
    proc: subprocess.Popen[bytes] | None = None
    run_ids: list[str] = field(default_factory=list)  # trainings this benchmark started
    runs: Path | None = None  # the server's ATTENTION_LAB_RUNS_DIR

    def rss_mb(self) -> float:
        """The app processes' resident memory: the server's process tree without the training
        workers, which the app processes spawn (so they are their children) but which are
        not the server's memory (benchmarks/bench_train_memory.py shows both)."""
        if self.proc is None:
            return float("nan")
        return sum(rss_kb(p) for p in descendants(self.proc.pid) if not is_training_worker(p)) / 1024


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"server not healthy within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


@contextmanager
def redis_queue(workers: int, logdir: Path) -> Iterator[str | None]:
    """With --redis-workers N: Debian's redis-server on a free loopback port and N training
    workers (`python -m transformer_core worker --device cpu`); yields the Redis URL."""
    if not workers:
        yield None
        return
    port, folder = free_port(), logdir / "redis"
    folder.mkdir()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "",
         "--appendonly", "yes"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    procs = []
    try:
        time.sleep(0.5)
        for i in range(workers):
            with open(logdir / f"worker-{i}.log", "wb") as out:
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "transformer_core",
                            "worker",
                            "--device",
                            "cpu",
                            "--redis",
                            url,
                        ],
                        cwd=ROOT,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )  # fmt: skip
                )
        yield url
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # the worker stops and saves its run
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        redis.terminate()
        redis.wait(timeout=30)


@contextmanager
def started(target: str, workers: int, logdir: Path) -> Iterator[Server]:
    port = free_port()
    log = logdir / f"{target}.log"
    if target == "single":
        cmd = [sys.executable, "-m", "streamlit", "run", "app/Home.py", "--server.port", str(port)]
        cmd += ["--server.address", "127.0.0.1", "--server.headless", "true"]
        cmd += ["--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"]
        name, count = "streamlit run (1 process)", 1
    else:
        cmd = ["bash", "deploy/serve.sh", "--workers", str(workers), "--port", str(port)]
        name, count = f"deploy/serve.sh --workers {workers}", workers
    runs = logdir / f"runs-{target}"  # trainings started here never touch the repo's runs/
    env = {**os.environ, "PYTHON": sys.executable, "ATTENTION_LAB_RUNS_DIR": str(runs)}
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = Server(name, f"http://127.0.0.1:{port}", count, proc, runs=runs)
    try:
        wait_healthy(server.base, proc, log)
        yield server
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stop_trainings(runs, server.run_ids)


def queue_waits(runs: Path, run_ids: list[str]) -> str:
    """Each training's wait in the queue (submitted -> a worker took it), or its place."""
    from attention_lab.serving import open_run_store

    queue, now, parts = open_run_store(runs, 1), time.time(), []
    for i, info in enumerate(map(queue.info, run_ids), 1):
        if info is None:
            parts.append(f"run {i}: unknown")
        elif info.status == "queued":
            parts.append(f"run {i}: waiting {now - info.created:.1f} s (place {info.position})")
        else:
            parts.append(f"run {i}: waited {(info.started or now) - info.created:.1f} s ({info.status})")
    return "queue: " + "; ".join(parts)


def stop_trainings(runs: Path, run_ids: list[str], timeout: float = 30) -> None:
    """Training workers outlive the web server by design: stop the ones started here and
    wait for their processes to end (killed after `timeout` s)."""
    if run_ids and os.environ.get("ATTENTION_LAB_REDIS_URL"):
        from attention_lab.serving import open_run_store

        queue = open_run_store(runs)
        for run_id in run_ids:
            with contextlib.suppress(Exception):
                queue.stop(run_id)
        return  # the workers themselves are stopped by redis_queue()
    if not run_ids or not (runs / "queue.sqlite3").exists():
        return
    from attention_lab.serving.sqlite_store import SQLiteRunStore

    queue = SQLiteRunStore(runs, max_running=1)
    for run_id in run_ids:
        queue.stop(run_id)
    pids = [info.pid for info in map(queue.info, run_ids) if info and info.pid]
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if os.path.exists(f"/proc/{pid}") and rss_kb(pid)]
        time.sleep(0.2)
    for pid in pids:
        print(f"    training worker {pid} did not stop within {timeout:.0f} s: killing it", flush=True)
        os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- report


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


HEADER = (
    f"{'target':<30} {'train':>5} {'users':>5} {'pages':>5} {'p50 s':>7} {'p95 s':>7} {'max s':>7} "
    f"{'runs/s':>6} {'exc':>3} {'err':>3} {'RSS MB before→after':>20} {'procs':>5}"
)


def row(name: str, trainings: int, r: StepResult) -> str:
    rate = len(r.times) / r.elapsed if r.elapsed else 0.0
    rss = f"{r.rss_before_mb:,.0f}→{r.rss_after_mb:,.0f}"
    p50 = statistics.median(r.times) if r.times else float("nan")
    return (
        f"{name:<30} {trainings:>5} {r.users:>5} {len(r.times):>5} {p50:>7.3f} {pct(r.times, 0.95):>7.3f} "
        f"{max(r.times, default=float('nan')):>7.3f} {rate:>6.2f} {len(r.exceptions):>3} "
        f"{len(r.errors):>3} {rss:>20} {len(r.upstreams) or '-':>5}"
    )


async def bench_target(server: Server, args: argparse.Namespace) -> list[str]:
    await warm_up(server.base, server.workers, args.page_timeout)
    watchers = await start_trainings(server.base, args.trainings, args.page_timeout) if args.trainings else []
    rows = []
    if watchers and server.runs is not None:
        await asyncio.sleep(3)  # let the workers take what they can
        print(queue_waits(server.runs, [w.run_id for w in watchers if w.run_id]), flush=True)
    try:
        for users in args.users:
            steps_before = sum(max(w.steps, default=0) for w in watchers)
            r = await load_step(server.base, users, args.duration, args.max_pages, args.page_timeout, server)
            line = row(server.name, args.trainings, r)
            if watchers:
                advanced = sum(max(w.steps, default=0) for w in watchers) - steps_before
                ended = sum(w.finished for w in watchers)
                line += f"  training steps +{advanced}" + (f" ({ended} run(s) ended)" if ended else "")
                for w in watchers:
                    line += "".join(f"\n    training error: {e}" for e in w.errors[:3])
                    w.errors.clear()
            print(line, flush=True)
            for message in (r.exceptions + r.errors)[:5]:
                print(f"    {message}", flush=True)
            rows.append(line)
        if args.soak:
            await soak(server, args)
    finally:
        await asyncio.gather(*(w.stop(args.page_timeout) for w in watchers))
        server.run_ids.extend(w.run_id for w in watchers if w.run_id)
    return rows


async def soak(server: Server, args: argparse.Namespace) -> None:
    """--soak-users users for --soak seconds; RSS every --soak-every seconds."""
    print(f"\nsoak: {args.soak_users} users for {args.soak:.0f} s on {server.name}", flush=True)
    print(f"{'t s':>6} {'RSS MB':>8} {'pages':>6} {'p95 s':>6} {'exc':>4} {'err':>4}", flush=True)
    t0 = time.monotonic()
    print(f"{0:>6.0f} {server.rss_mb():>8.0f}", flush=True)
    while time.monotonic() - t0 < args.soak:
        chunk = min(args.soak_every, args.soak - (time.monotonic() - t0))
        r = await load_step(server.base, args.soak_users, chunk, 10**9, args.page_timeout, server)
        print(
            f"{time.monotonic() - t0:>6.0f} {r.rss_after_mb:>8.0f} {len(r.times):>6} "
            f"{pct(r.times, 0.95):>6.2f} {len(r.exceptions):>4} {len(r.errors):>4}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=["single", "serve", "both"], default="both")
    parser.add_argument("--url", help="measure a server already running here instead (no memory figures)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="for serve.sh")
    parser.add_argument("--users", default="1,5,20", help="comma-separated concurrent users per step")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per step (bound)")
    parser.add_argument("--max-pages", type=int, default=200, help="page opens per user per step (bound)")
    parser.add_argument(
        "--page-timeout", type=float, default=60.0, help="seconds before a page counts as error"
    )
    parser.add_argument("--trainings", type=int, default=0, help="trainings started and watched on /train")
    parser.add_argument(
        "--redis-workers",
        type=int,
        default=0,
        help="run queue on a local redis-server with this many training workers (several-hosts setup)",
    )
    parser.add_argument(
        "--chaos",
        action="store_true",
        help="kill -9 one serve.sh app process under --users users (benchmarks/bench_chaos.py)",
    )
    parser.add_argument("--before", type=float, default=20.0, help="--chaos: seconds of load before the kill")
    parser.add_argument("--after", type=float, default=40.0, help="--chaos: seconds of load after it")
    parser.add_argument("--soak", type=float, default=0.0, help="then this many seconds at --soak-users")
    parser.add_argument("--soak-users", type=int, default=20)
    parser.add_argument("--soak-every", type=float, default=30.0)
    args = parser.parse_args()
    args.users = [int(u) for u in args.users.split(",") if u.strip()]
    if args.soak > 3600 or args.duration > 3600:
        parser.error("--soak and --duration are bounded to one hour")

    if args.chaos:
        from bench_chaos import chaos

        users = max(args.users)
        print(f"{os.cpu_count()} cores; chaos: {users} users, serve.sh --workers {args.workers}", flush=True)
        with (
            tempfile.TemporaryDirectory(prefix="bench-chaos-") as tmp,
            started("serve", args.workers, Path(tmp)) as s,
        ):
            asyncio.run(chaos(s, users, args.before, args.after, args.page_timeout))
        return
    print(
        f"{os.cpu_count()} cores; deep links: {' '.join(DEEP_LINKS)}; "
        f"{args.duration:.0f} s or {args.max_pages} pages per user per step, no think time",
        flush=True,
    )
    print(HEADER, flush=True)
    if args.url:
        server = Server(f"{args.url}", args.url.rstrip("/"), args.workers)
        asyncio.run(bench_target(server, args))
        return
    targets = ["single", "serve"] if args.target == "both" else [args.target]
    with (
        tempfile.TemporaryDirectory(prefix="bench-load-") as tmp,
        redis_queue(args.redis_workers, Path(tmp)) as url,
    ):
        if url:
            os.environ["ATTENTION_LAB_REDIS_URL"] = url  # the servers started below inherit it
            print(f"run queue: Redis {url} with {args.redis_workers} training workers", flush=True)
        for target in targets:
            with started(target, args.workers, Path(tmp)) as server:
                asyncio.run(bench_target(server, args))


if __name__ == "__main__":
    main()
