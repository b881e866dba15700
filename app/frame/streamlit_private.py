"""Every private part of Streamlit the lab uses, in one place, checked once against the installed Streamlit.

Streamlit has no public call that reruns another session, lists a process's sessions, or copies a
session's messages and state (the lecture's push and mirrors), tells people apart (its XSRF cookie:
accounts.sign_in), or names its server's routes (HEALTH, STREAM, UPLOAD: proxies, probes). Each use
is named here; a session is handed out only to be passed back. `check()` looks once per process
whether each part exists; one missing is said once and the push and mirrors stay off (followers poll).
Run benchmarks/streamlit_upgrade_check.py before an upgrade.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import os
import socket
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit
from streamlit import runtime

# `X as X`: re-exported, so the harness and the tests import no Streamlit internals themselves
from streamlit.delta_generator import DeltaGenerator as DeltaGenerator
from streamlit.proto.BackMsg_pb2 import BackMsg as BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.proto.Element_pb2 import Element as Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg as ForwardMsg
from streamlit.proto.NewSession_pb2 import Config as Config
from streamlit.proto.NumberInput_pb2 import NumberInput as NumberInput
from streamlit.proto.WidgetStates_pb2 import WidgetState as WidgetState
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.state.session_state import SessionState as SessionState

from attention_lab.frame import sockets
from attention_lab.frame.introspection import assigned as _assigned
from attention_lab.frame.introspection import field as _field
from attention_lab.frame.introspection import find as _find
from attention_lab.frame.introspection import method as _method

_LOG = logging.getLogger(__name__)
XSRF_COOKIE = "_streamlit_xsrf"  # the cookie Streamlit's server keeps the browser's XSRF token in
# the routes of Streamlit's server that nginx forwards and a health probe asks (Streamlit's own names)
HEALTH, STREAM, UPLOAD = "/_stcore/health", "/_stcore/stream", "/_stcore/upload_file"
_APP_SESSION = "streamlit.runtime.app_session:AppSession"
_RUNTIME = "streamlit.runtime.runtime:Runtime"
_MEDIA = "streamlit.runtime.media_file_manager:MediaFileManager"
_STATE = "streamlit.runtime.state.session_state"
_SESSIONS = "streamlit.runtime.session_manager"
_MANAGER = f"{_SESSIONS}:SessionManager"
_QUEUE = "streamlit.runtime.forward_msg_queue"
_XSRF = "streamlit.web.server.starlette"
_STATIC = "streamlit.web.server.starlette.starlette_static_routes"
_SERVER = "streamlit.web.server.starlette.starlette_server"
_SCRIPTS = "streamlit.runtime.scriptrunner.script_cache:ScriptCache"
_APPTEST_RUNNER = "streamlit.testing.v1.local_script_runner:LocalScriptRunner"


# ---------------------------------------------------------------- the check


def _xsrf_format() -> bool:
    """Whether Streamlit still writes the XSRF cookie as "2|mask|masked token|time" (browser_token)."""
    token = bytes(range(16))
    made = _find(f"{_XSRF}.starlette_app_utils:generate_xsrf_token_string")(token, 1764000000)
    return browser_token(made) == token.hex()


# name -> probe: True where the part exists on the installed Streamlit
PARTS: dict[str, Callable[[], bool]] = {
    "Runtime._session_mgr": lambda: _assigned(_RUNTIME, "_session_mgr"),
    "Runtime._get_async_objs": lambda: _method(_RUNTIME, "_get_async_objs"),
    "AsyncObjects.eventloop": lambda: _field("streamlit.runtime.runtime:AsyncObjects", "eventloop"),
    "Runtime.media_file_mgr": lambda: hasattr(_find(_RUNTIME), "media_file_mgr"),
    "MediaFileManager._lock": lambda: _assigned(_MEDIA, "_lock"),
    "MediaFileManager._files_by_session_and_coord": lambda: _assigned(_MEDIA, "_files_by_session_and_coord"),
    "SessionManager.list_active_sessions": lambda: _method(_MANAGER, "list_active_sessions"),
    "SessionManager.get_active_session_info": lambda: _method(_MANAGER, "get_active_session_info"),
    "ActiveSessionInfo.session": lambda: _field(f"{_SESSIONS}:ActiveSessionInfo", "session"),
    "AppSession._scriptrunner": lambda: _assigned(_APP_SESSION, "_scriptrunner"),
    "AppSession._client_state": lambda: _assigned(_APP_SESSION, "_client_state"),
    "AppSession._browser_queue": lambda: _assigned(_APP_SESSION, "_browser_queue"),
    "AppSession._message_enqueued_callback": lambda: _assigned(_APP_SESSION, "_message_enqueued_callback"),
    "AppSession._enqueue_forward_msg": lambda: _method(_APP_SESSION, "_enqueue_forward_msg"),
    "AppSession.handle_backmsg": lambda: _method(_APP_SESSION, "handle_backmsg"),
    "AppSession.request_rerun": lambda: _method(_APP_SESSION, "request_rerun"),
    "AppSession.has_fragment": lambda: _method(_APP_SESSION, "has_fragment"),
    "ForwardMsgQueue.enqueue": lambda: _method(f"{_QUEUE}:ForwardMsgQueue", "enqueue"),
    "SessionState._new_widget_state": lambda: _field(f"{_STATE}:SessionState", "_new_widget_state"),
    "WStates.widget_metadata": lambda: _field(f"{_STATE}:WStates", "widget_metadata"),
    "ClientState.fragment_id": lambda: "fragment_id" in ClientState.DESCRIPTOR.fields_by_name,
    "ClientState.is_auto_rerun": lambda: "is_auto_rerun" in ClientState.DESCRIPTOR.fields_by_name,
    "XSRF_COOKIE_NAME": lambda: _find(f"{_XSRF}.starlette_server_config:XSRF_COOKIE_NAME") == XSRF_COOKIE,
    "XSRF cookie format 2": _xsrf_format,
    "config._main_script_path": lambda: hasattr(_find("streamlit.config"), "_main_script_path"),
    "create_streamlit_static_handler": lambda: callable(_find(f"{_STATIC}:create_streamlit_static_handler")),
    "ScriptCache.clear": lambda: _method(_SCRIPTS, "clear"),
    "starlette_server._bind_socket": lambda: callable(_find(f"{_SERVER}:_bind_socket")),
}


@dataclass(frozen=True)
class Check:
    """What `check()` found: the installed Streamlit's version and the parts it lacks."""

    streamlit: str
    missing: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Every part is there: the push and the mirrors may run."""
        return not self.missing


_LOCK = threading.Lock()
_FOUND: Check | None = None  # check()'s answer, once made


def _present(probe: Callable[[], bool]) -> bool:
    """The probe's answer; False where what it looks at cannot even be reached."""
    try:
        return bool(probe())
    except Exception:  # noqa: BLE001 - a module, class or constant gone is a part missing
        return False


def probe_all() -> Check:
    """Look at every part now (no caching, no warning): what an upgrade check prints."""
    missing = tuple(name for name, probe in PARTS.items() if not _present(probe))
    return Check(streamlit.__version__, missing)


def check() -> Check:
    """Every part looked at once per process (no per-user data); one warning where any is missing.
    Under a lock: the first followers' runs may ask at once, and the warning is said once."""
    global _FOUND
    if _FOUND is not None:  # every run after the first: no lock
        return _FOUND
    with _LOCK:
        if _FOUND is None:
            _FOUND = probe_all()
            if not _FOUND.ok:
                _LOG.warning(
                    "Streamlit %s lacks internals the lecture's push uses: %s. The push and mirrors are "
                    "off; followers poll for the lecturer's view instead (slower). "
                    "See benchmarks/streamlit_upgrade_check.py.",
                    _FOUND.streamlit,
                    ", ".join(_FOUND.missing),
                )
        return _FOUND


# ---------------------------------------------------------------- the command and the harness


def run_command_line() -> None:
    """Streamlit's own command line on sys.argv, as `python -m streamlit` runs it."""
    from streamlit.web.cli import main

    main(prog_name="streamlit")


def share_apptest_scripts() -> Any:
    """From now on every AppTest of this process shares one compiled-script cache (returned):
    AppTest compiles a page again on every run, which no server user pays."""
    from streamlit.testing.v1 import app_test

    scripts = _find(_SCRIPTS)()
    app_test.ScriptCache = lambda: scripts  # type: ignore[attr-defined]
    return scripts


#: what the profiling shim (attention_lab.testing.profiling) wraps, by its hook's name: every
#: script run (in its own thread), the page each run shows, every message sent (on the event loop)
PROFILED = {
    "run_script": ("streamlit.runtime.scriptrunner.script_runner:ScriptRunner", "_run_script"),
    "page_run": ("streamlit.navigation.page:Page", "run"),
    "send_message": (_RUNTIME, "_send_message"),
}


#: Streamlit's modules by the part of a page run they do (what the profiles' split charges them to)
RUN_PARTS = {
    "serialisation": (
        "streamlit.proto",
        "streamlit.runtime.forward_msg_cache",
        "streamlit.runtime.runtime_util",
    ),
    "sending": ("streamlit.web.server", _QUEUE),
    "compile": (_SCRIPTS.partition(":")[0], "streamlit.runtime.scriptrunner.magic"),  # a page compiled again
}


def runner_session_id(runner: Any) -> str:
    """The session a ScriptRunner (the PROFILED "run_script" hook's argument) runs scripts for."""
    return str(getattr(runner, "_session_id", ""))


def rerun_page_name(rerun_data: Any) -> str:
    """The page a run asks for ("" for the default), from the "run_script" hook's RerunData."""
    return str(rerun_data.page_name or "")


def sender_session_id(session_info: Any) -> str:
    """The session a message is for, from the "send_message" hook's ActiveSessionInfo."""
    return str(session_info.session.id)


@contextlib.contextmanager
def around_apptest_runs(around: Callable[[Callable[[], None]], None]) -> Iterator[None]:
    """While the block lasts, each AppTest script thread runs as `around(run)` (a benchmark's
    profile of one page run, taken in the thread that runs it)."""
    owner = _find(_APPTEST_RUNNER)
    original = owner._run_script_thread

    def wrapper(self: Any) -> None:
        around(lambda: original(self))

    owner._run_script_thread = wrapper
    try:
        yield
    finally:
        owner._run_script_thread = original


def wrap_profiled(hooks: dict[str, Callable[..., Any]]) -> None:
    """Replace each PROFILED method by `hooks[name](original, *args)` (a benchmark's server only)."""
    for name, (where, method) in PROFILED.items():
        owner = _find(where)
        original, around = getattr(owner, method), hooks[name]

        def wrapper(*args: Any, original: Any = original, around: Any = around) -> Any:
            return around(original, *args)

        setattr(owner, method, wrapper)


# ---------------------------------------------------------------- the config


def script_config(script: Path) -> types.ModuleType:
    """Streamlit's config as `streamlit run <script>` reads it, the script folder's config.toml over
    the project's and the user's (its command sets this private path first; no public call does)."""
    from streamlit import config

    config._main_script_path = str(script)
    config.get_config_options(force_reparse=True)
    return config


def config_files(script: Path | None = None) -> list[str]:
    """The config.toml files `streamlit run <script>` reads, in order (the last one wins); None:
    those this process's server read. The process's own script path is left as it was."""
    from streamlit import config

    saved = config._main_script_path
    config._main_script_path = saved if script is None else str(script)
    try:
        return list(config.get_config_files("config.toml"))
    finally:
        config._main_script_path = saved


def option_source(key: str) -> tuple[Any, str]:
    """A config option's value in this process and where it was set: a file's path, "<default>"."""
    from streamlit import config

    return config.get_option(key), str(config.get_config_options()[key].where_defined)


def frontend_build() -> Path:
    """Streamlit's built frontend as it ships it: index.html and static/ (js, css, media)."""
    return Path(streamlit.__file__).parent / "static"


def backend_script(base_url: str | None) -> str:
    """The <script> that tells Streamlit's frontend where its server is: this origin and the
    server's base path (its `server.baseUrlPath`)."""
    path = "".join(f"{part}/" for part in (base_url or "").split("/") if part)
    return f'<script>window.__streamlit={{BACKEND_BASE_URL:location.origin+"/{path}"}}</script>'


def _wrap_once(part: str, where: str, name: str, wrap: Callable[[Any], Any]) -> bool:
    """Replace `name` of the module or class at `where` by wrap(what is there), once per process
    (a second call finds its own wrapper). False where `part` is missing: Streamlit's own stays."""
    if part in check().missing:
        return False
    owner = _find(where)
    if getattr(getattr(owner, name), "wrapped_by_lab", False):
        return True
    original = getattr(owner, name)
    wrapper = wrap(original)
    wrapper.wrapped_by_lab, wrapper.__wrapped__ = True, original
    setattr(owner, name, wrapper)
    return True


def announce_backend() -> bool:
    """Before the server starts: every page's index.html tells the frontend where the server is
    (else /train/ + HEALTH and /host-config answer 404 first). False where the part is missing."""
    from starlette.responses import HTMLResponse

    def announcing(make: Callable[..., Any]) -> Callable[..., Any]:
        def handler(directory: str, base_url: str | None) -> Any:
            files = make(directory=directory, base_url=base_url)
            index = os.path.join(directory, "index.html")
            with open(index, encoding="utf-8") as f:
                page = f.read().replace("<head>", "<head>" + backend_script(base_url), 1)
            plain = files.get_response

            async def get_response(path: str, scope: Any) -> Any:
                response = await plain(path, scope)
                if getattr(response, "path", None) != index or response.status_code != 200:
                    return response  # a script, a style, an image, a 304
                cache = response.headers.get("Cache-Control", "no-cache")
                return HTMLResponse(page, headers={"Cache-Control": cache})

            files.get_response = get_response  # the instance's: Streamlit's class stays as it is
            return files

        return handler

    part = "create_streamlit_static_handler"  # named as the function it replaces
    return _wrap_once(part, _STATIC, part, announcing)


def keep_compiled_pages() -> bool:
    """Before the server starts: with no file watcher (the lab's `server.fileWatcherType`), the
    compiled pages are kept when a process's last session closes (Streamlit forgets them, to read
    an edited file again). False where the part is missing: Streamlit's own way."""
    from streamlit import config

    def keeping(plain: Callable[[Any], None]) -> Callable[[Any], None]:
        def clear(self: Any) -> None:
            """Forget the compiled pages only where a file watcher may see them change."""
            if config.get_option("server.fileWatcherType") != "none":
                plain(self)

        return clear

    return _wrap_once("ScriptCache.clear", _SCRIPTS, "clear", keeping)


def send_without_delay() -> bool:
    """Before the server starts: each message is sent as written (Streamlit binds without naming
    TCP, so Nagle stays on: a delayed ACK's wait). False where the part is missing."""
    naming = lambda bind: lambda address, port, backlog: sockets.naming_tcp(bind(address, port, backlog))  # noqa: E731
    return _wrap_once("starlette_server._bind_socket", _SERVER, "_bind_socket", naming)


def server_socket(address: str, port: int, backlog: int, *, streamlit_own: bool = False) -> socket.socket:
    """A socket bound as the server binds its own now, or (`streamlit_own`) as Streamlit alone does."""
    bind = _find(f"{_SERVER}:_bind_socket")
    return (inspect.unwrap(bind) if streamlit_own else bind)(address, port, backlog)


# ---------------------------------------------------------------- the runtime, its sessions, the XSRF cookie


def runtime_exists() -> bool:
    """Whether a Streamlit server runs in this process (not under AppTest)."""
    return runtime.exists()


def event_loop() -> asyncio.AbstractEventLoop:
    """The runtime's event loop, where its sessions are changed."""
    return runtime.get_instance()._get_async_objs().eventloop


def sessions() -> dict[str, Any]:
    """This process's sessions by id (no public session list): AppSessions, to pass to the calls here."""
    infos = runtime.get_instance()._session_mgr.list_active_sessions()
    return {info.session.id: info.session for info in infos}


def find_session(session_id: str) -> Any | None:
    """The session of that id; None where its tab has closed."""
    info = runtime.get_instance()._session_mgr.get_active_session_info(session_id)
    return None if info is None else info.session


def session_state(session: Any) -> SessionState:
    """The session's own state: what st.session_state is in its runs."""
    return session.session_state


def is_running(session: Any) -> bool:
    """Whether a run of the session goes on now (no public "is running")."""
    return session._scriptrunner is not None


def has_fragments(session: Any, fragment_ids: Iterable[str]) -> bool:
    """Whether the session knows every one of these fragments (their reruns need them)."""
    return all(session.has_fragment(f) for f in fragment_ids)


def rerun_page(session: Any) -> None:
    """Rerun the whole of the session's current page, its URL and widgets as they are (run-on-save's call)."""
    state = ClientState()
    state.CopyFrom(session._client_state)  # the last run's page and URL
    state.fragment_id, state.is_auto_rerun = "", False  # the whole page, not a fragment
    session.request_rerun(state)


def tap(session: Any, on_forward: Callable[[ForwardMsg], None], on_back: Callable[[BackMsg], None]) -> None:
    """Until `untap`: each message the session sends its browser is sent, then shown to on_forward;
    each one from its browser is shown to on_back, then handled."""
    send, handle = session._enqueue_forward_msg, session.handle_backmsg

    def sent(msg: ForwardMsg) -> None:
        send(msg)
        on_forward(msg)

    def received(msg: BackMsg) -> None:
        on_back(msg)
        handle(msg)

    session._enqueue_forward_msg, session.handle_backmsg = sent, received  # this session's alone


def untap(session: Any) -> None:
    """The session's messages pass as Streamlit passes them again."""
    for name in ("_enqueue_forward_msg", "handle_backmsg"):
        session.__dict__.pop(name, None)


def send_to_browser(session: Any, messages: Iterable[ForwardMsg]) -> None:
    """Queue messages for the session's browser as its own sending does; wake the server once."""
    queue = session._browser_queue
    for msg in messages:
        queue.enqueue(msg)
    session._message_enqueued_callback()


def widget_metadata(state: SessionState) -> Iterable[Any]:
    """The state's widget metadata records (frozen: shared between copies)."""
    return state._new_widget_state.widget_metadata.values()


def replace_state(target: SessionState, source: SessionState) -> None:
    """Every field of `target` set to `source`'s (values, widgets, keys, metadata)."""
    for f in dataclasses.fields(SessionState):
        setattr(target, f.name, getattr(source, f.name))


def held_media(session_id: str) -> dict[str, Any]:
    """The media files a session's last run holds, by element (no public call says who holds which)."""
    files = runtime.get_instance().media_file_mgr
    with files._lock:
        return dict(files._files_by_session_and_coord.get(session_id, {}))


def hold_media(held: dict[str, Any], session_id: str) -> None:
    """The session holds the files `held` (as its own run would have made it hold them)."""
    files = runtime.get_instance().media_file_mgr
    with files._lock:
        files._files_by_session_and_coord[session_id] = dict(held)


def browser_token(cookie: str) -> str:
    """The token of an XSRF cookie "2|mask|masked token|time" (the mask changes with every
    page load, the token stays with the browser); "" when it is not one."""
    parts = cookie.strip("\"'").split("|")
    try:
        mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
    except (IndexError, ValueError):
        return ""
    if len(parts) != 4 or parts[0] != "2" or not mask:
        return ""
    return bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked)).hex()


def script_session_id() -> str:
    """The id of the session whose script run is calling ("" outside a run, e.g. a thread)."""
    ctx = get_script_run_ctx()
    return ctx.session_id if ctx else ""
