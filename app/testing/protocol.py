"""One browser tab, spoken as Streamlit's own websocket protocol: GET a page (keeping the
cookies nginx sets), open Streamlit's websocket (streamlit_private.STREAM), send rerun_script
BackMsgs and read the ForwardMsgs of each script run until it finishes, keeping what a test or a
benchmark asks of the page.

Why not a real browser: a page run is what a page costs the server, and hundreds of these
tabs fit in one process where a handful of Chromium tabs fill a box.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import websockets
from websockets.asyncio.client import ClientConnection, connect

from attention_lab.frame.streamlit_private import STREAM, BackMsg, ForwardMsg

ROUTE = "attention_lab_route"  # the cookie nginx routes a browser by (deploy/serve.sh)
FINISHED_SUCCESSFULLY = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_SUCCESSFULLY")
FINISHED_WITH_COMPILE_ERROR = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_WITH_COMPILE_ERROR")
FINISHED_EARLY_FOR_RERUN = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_EARLY_FOR_RERUN")
UPDATE_QUIET_SECONDS = 0.05  # elements sent outside a run: the update is over when none come this long


class ProtocolError(RuntimeError):
    """The server answered something a browser could not use."""


@dataclass
class PageResult:
    """One page opened as a new tab opens it: seconds from the HTML request to script_finished."""

    seconds: float
    exceptions: list[str]
    upstream: str | None


@dataclass
class Browser:
    """One simulated browser: its cookies (the route cookie keeps it on one app process)."""

    base: str
    cookies: dict[str, str] = field(default_factory=dict)

    @property
    def cookie_header(self) -> str:
        """The Cookie header this browser sends."""
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items())

    def _keep_cookies(self, set_cookie_headers: list[str]) -> None:
        """Keep what Set-Cookie headers set, as a browser does (the route cookie above all)."""
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
        """The page's websocket, with this browser's cookies (an async context manager)."""
        parts = urlsplit(self.base)
        headers = {"Cookie": self.cookie_header} if self.cookies else {}
        return connect(
            f"ws://{parts.netloc}{STREAM}",
            subprotocols=[websockets.Subprotocol("streamlit")],
            origin=websockets.Origin(f"{parts.scheme}://{parts.netloc}"),
            additional_headers=headers,
            max_size=None,
            open_timeout=30,
            ping_interval=None,
        )


def rerun_msg(
    link: str,
    widgets: Sequence[tuple[str, bool]] = (),
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
    """What one script run (or an update outside a run) showed, as far as tests and benchmarks ask."""

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


def _note_element(out: RunOutcome, msg: ForwardMsg) -> None:
    """Keep in `out` what a new element of `msg` shows."""
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


def _note(out: RunOutcome, msg: ForwardMsg) -> str:
    """Keep in `out` what `msg` shows; returns its kind."""
    kind = msg.WhichOneof("type")
    if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
        _note_element(out, msg)
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
