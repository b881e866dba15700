"""The one door to Streamlit's internals (attention_lab.frame.streamlit_private): on the installed
Streamlit every part is there and the push runs; with a part taken away it is named in one
warning, the push and mirrors are off and followers poll every 2 s; no other module of the app,
the benchmarks or the tests touches a private Streamlit name or imports Streamlit's internals.
Through a real app process: tests/deploy/test_private_fallback.py."""

from __future__ import annotations
import __future__

import ast
import asyncio
import concurrent.futures
import importlib.util
import inspect
import logging
import re
import socket
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import streamlit
from streamlit.runtime import app_session
from streamlit.runtime.app_session import AppSession
from streamlit.runtime.runtime import Runtime
from streamlit.web.server.starlette import starlette_server_config

from attention_lab.frame import streamlit_private
from attention_lab.lecture import classroom
from attention_lab.lecture import push as class_push

APP = Path(__file__).resolve().parents[2] / "app"
ADAPTER = APP / "frame" / "streamlit_private.py"
LOGGER = "attention_lab.frame.streamlit_private"


def _adapter_names() -> set[str]:
    """The private names the adapter's own code reaches for besides its PARTS: another object's
    `_x`, or a "_x" it looks up by name."""
    found = set()
    for node in ast.walk(ast.parse(ADAPTER.read_text())):
        if isinstance(node, ast.Attribute) and not (
            isinstance(node.value, ast.Name) and node.value.id == "self"
        ):
            found.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            found.add(node.value)
    return {name for name in found if name.startswith("_") and not name.startswith("__")}


# the private names of Streamlit's the adapter reaches: no other module may name them, not even
# on a stand-in of its own (a fake AppSession reads them through the adapter's calls too)
GUARDED = {
    name
    for name in [
        *(part.split(".")[-1] for part in streamlit_private.PARTS),
        *(method for _, method in streamlit_private.PROFILED.values()),
        streamlit_private.XSRF_COOKIE,
        *_adapter_names(),
    ]
    if name.startswith("_")
}
# the public-looking calls of Streamlit's internal objects (a session, the session manager, the
# runtime's media files) the adapter makes: read outside it, they hand those objects around
INTERNAL_CALLS = {
    name
    for part in streamlit_private.PARTS
    for owner, _, name in [part.partition(".")]
    if owner in ("AppSession", "SessionManager", "Runtime", "AsyncObjects", "WStates")
    and not name.startswith("_")
}
COMMON = {"_lock"}  # guarded, but a name too common to forbid on the lab's own objects
# Streamlit's modules anyone may import; the rest are its internals, imported by the adapter alone
PUBLIC_MODULES = {
    "streamlit",
    "streamlit.components.v1",
    "streamlit.testing.v1",
}
# Private Streamlit names other modules use: none
ELSEWHERE: set[tuple[str, str]] = set()


@pytest.fixture
def fresh_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """check() looks again in this test; after it, the process's own answer is back."""
    monkeypatch.setattr(streamlit_private, "_FOUND", None)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def test_every_part_is_there_on_the_installed_streamlit(
    fresh_check: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    found = streamlit_private.check()
    assert found.ok and found.missing == (), found
    assert found.streamlit == streamlit.__version__
    assert len(streamlit_private.PARTS) >= 20 and {
        "Runtime._session_mgr",
        "AppSession._scriptrunner",
        "AppSession._enqueue_forward_msg",
        "SessionState._new_widget_state",
        "MediaFileManager._files_by_session_and_coord",
        "XSRF cookie format 2",
    } <= set(streamlit_private.PARTS)
    assert class_push.available() and classroom.poll_seconds() == classroom.FALLBACK_POLL_SECONDS == 60.0
    assert not warnings_of(caplog)


@pytest.mark.parametrize(
    ("owner", "name", "part"),
    [
        (AppSession, "_enqueue_forward_msg", "AppSession._enqueue_forward_msg"),  # a method
        (Runtime, "_get_async_objs", "Runtime._get_async_objs"),
        (starlette_server_config, "XSRF_COOKIE_NAME", "XSRF_COOKIE_NAME"),  # a module's constant
    ],
)
def test_a_part_taken_away_is_named_once_and_followers_poll(
    owner: object,
    name: str,
    part: str,
    fresh_check: None,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    monkeypatch.delattr(owner, name)
    assert streamlit_private.check().missing == (part,)
    assert streamlit_private.check() is streamlit_private.check()  # looked at once per process
    assert not class_push.available()
    assert classroom.poll_seconds() == classroom.UNPUSHED_POLL_SECONDS == 2.0
    (warning,) = warnings_of(caplog)  # one warning, naming the part
    assert part in warning and "push" in warning


def test_followers_asking_at_once_hear_one_warning(
    fresh_check: None, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.WARNING, LOGGER)
    monkeypatch.delattr(Runtime, "_get_async_objs")
    start = threading.Barrier(8)

    def first_run() -> streamlit_private.Check:
        start.wait()
        return streamlit_private.check()

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: first_run(), range(8)))
    assert len({id(a) for a in answers}) == 1 and len(warnings_of(caplog)) == 1


def test_an_instance_attribute_no_longer_set_is_named(
    fresh_check: None, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AppSession's private attributes exist only on instances: the check reads what its
    methods set. An upgrade that renamed one where AppSession sets it: that one is named."""
    caplog.set_level(logging.WARNING, LOGGER)
    monkeypatch.setattr(AppSession, "__init__", renamed_init("_message_enqueued_callback", "_on_enqueued"))
    assert streamlit_private.check().missing == ("AppSession._message_enqueued_callback",)
    assert len(warnings_of(caplog)) == 1


def renamed_init(old: str, new: str) -> Callable[..., None]:
    """AppSession.__init__ as Streamlit's source has it, with `self.<old>` renamed `self.<new>`."""
    source = textwrap.dedent(inspect.getsource(AppSession.__init__)).replace(f"self.{old}", f"self.{new}")
    assert f"self.{new}" in source
    made: dict[str, Any] = {}
    flags = __future__.annotations.compiler_flag
    code = compile(source, app_session.__file__, "exec", flags=flags, dont_inherit=True)
    exec(code, dict(vars(app_session)), made)  # noqa: S102 - Streamlit's own source, one name changed
    return made["__init__"]


def test_without_the_push_no_watch_and_no_mirrors_start(
    fresh_check: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a server (the runtime exists) with a part missing, the watch never reads the runtime."""
    monkeypatch.delattr(AppSession, "_enqueue_forward_msg")
    monkeypatch.setattr(streamlit_private, "runtime_exists", lambda: True)

    def no_loop() -> None:
        raise AssertionError("the watch reached for the runtime's event loop")

    monkeypatch.setattr(streamlit_private, "event_loop", no_loop)
    keys = ("following", "seen", "beat")
    assert class_push.watch(object(), *keys, 4.0, ("page",), "runs") is None
    assert class_push.watch(object(), *keys, 4.0, None, "runs") is None


def test_the_xsrf_cookie_streamlit_writes_gives_its_token() -> None:
    from streamlit.web.server.starlette.starlette_app_utils import generate_xsrf_token_string

    token = bytes(range(16))
    one, two = generate_xsrf_token_string(token), generate_xsrf_token_string(token)
    assert one != two and streamlit_private.browser_token(one) == streamlit_private.browser_token(two)
    assert streamlit_private.browser_token(one) == token.hex()


FIRST_PARTY = ("attention_lab", "transformer_core", "tests", "benchmarks")


def _imported(tree: ast.Module) -> tuple[bool, set[str]]:
    """Whether the module imports streamlit, and the names it binds to the lab's own modules."""
    streamlit, own = False, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            streamlit |= any(a.name.split(".")[0] == "streamlit" for a in node.names)
            own |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith(FIRST_PARTY)}
        elif isinstance(node, ast.ImportFrom):
            streamlit |= (node.module or "").split(".")[0] == "streamlit"
            if node.level or (node.module or "").startswith(FIRST_PARTY):
                own |= {a.asname or a.name for a in node.names}
    return streamlit, own


def _root(value: ast.expr) -> ast.expr:
    """The start of a chain: `runtime` of runtime.get_instance().x, `super()` of super().x."""
    while isinstance(value, (ast.Attribute, ast.Subscript)) or (
        isinstance(value, ast.Call) and not (isinstance(value.func, ast.Name) and value.func.id == "super")
    ):
        value = value.func if isinstance(value, ast.Call) else value.value
    return value


def _own(value: ast.expr, own_modules: set[str]) -> bool:
    """self._x, cls._x, super()._x, or a lab module's `_x`: the lab's own private part, not Streamlit's."""
    root = _root(value)
    if isinstance(root, ast.Name):
        return root.id in ("self", "cls") or root.id in own_modules
    return isinstance(root, ast.Call) and isinstance(root.func, ast.Name) and root.func.id == "super"


@dataclass(frozen=True)
class Use:
    """A private name a module uses: where, the expression, whether the adapter guards the name."""

    path: str
    line: int
    what: str
    guarded: bool


def _private_import(node: ast.Import | ast.ImportFrom) -> str | None:
    """The first of Streamlit's internals an import reaches, if any: a module outside
    PUBLIC_MODULES, or a private name of any."""
    if isinstance(node, ast.Import):
        reached = [a.name for a in node.names]
    elif node.level or (node.module or "").split(".")[0] != "streamlit":
        return None
    else:  # `from streamlit import runtime` reaches the module streamlit.runtime
        names = [f"{node.module}.{a.name}" for a in node.names]
        submodules = [n for n in names if node.module == "streamlit" and importlib.util.find_spec(n)]
        reached = [node.module, *submodules, *(n for n in names if n.rsplit(".", 1)[1].startswith("_"))]
    return next(
        (
            m
            for m in reached
            if m.split(".")[0] == "streamlit"
            and (m not in PUBLIC_MODULES or any(part.startswith("_") for part in m.split(".")))
        ),
        None,
    )


def private_uses(path: Path, root: Path | None = None) -> list[Use]:
    """Where a module names a private part of Streamlit: a guarded name anywhere (an attribute, even
    on a stand-in of its own, a method or keyword of that name, a word of a string), another
    object's `_x` in a module that imports streamlit, an import of Streamlit's internals."""
    tree = ast.parse(path.read_text(), str(path))
    (streamlit_module, own_modules), name = _imported(tree), str(path.relative_to(root or APP.parent))
    strict = GUARDED - COMMON
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in INTERNAL_CALLS
            and not _own(node.value, own_modules)
        ):
            found.append(Use(name, node.lineno, ast.unparse(node), True))
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            guarded = node.attr in GUARDED
            if node.attr in strict or (not _own(node.value, own_modules) and (streamlit_module or guarded)):
                found.append(Use(name, node.lineno, ast.unparse(node), guarded))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in strict:
            found.append(Use(name, node.lineno, f"def {node.name}", True))
        elif isinstance(node, ast.keyword) and node.arg in strict:
            found.append(Use(name, node.lineno, f"{node.arg}=", True))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = set(re.findall(r"\b_\w+", node.value)) & strict
            if node.value in GUARDED or words:
                found.append(Use(name, node.lineno, repr(node.value)[:60], True))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and (module := _private_import(node)):
            found.append(Use(name, node.lineno, f"import {module}", False))
    return found


def outside_the_adapter() -> list[Use]:
    """The package and the benchmarks (which profile Streamlit's runs) outside the adapter."""
    paths = [*APP.rglob("*.py"), *(APP.parent / "benchmarks").rglob("*.py")]
    return [use for path in sorted(paths) if path != ADAPTER for use in private_uses(path)]


# the adapter's own tests name the parts to probe them, and take one away to see the fallback
ADAPTER_TESTS = {Path(__file__).resolve(), APP.parent / "tests" / "deploy" / "test_private_fallback.py"}


def in_the_tests() -> list[Use]:
    """The tests but the adapter's: their fakes may stand in for Streamlit's objects, but they
    read them through the adapter's calls too, and import Streamlit's types from it."""
    paths = (APP.parent / "tests").rglob("*.py")
    return [use for path in sorted(paths) if path not in ADAPTER_TESTS for use in private_uses(path)]


def test_no_module_but_the_adapter_names_the_parts_it_guards() -> None:
    assert {"_session_mgr", "_scriptrunner", "_browser_queue", "_streamlit_xsrf", "_run_script"} <= GUARDED
    assert {"handle_backmsg", "request_rerun", "list_active_sessions", "media_file_mgr"} <= INTERNAL_CALLS
    assert all(path.exists() for path in ADAPTER_TESTS)
    uses = [use for use in [*outside_the_adapter(), *in_the_tests()] if use.guarded]
    assert not uses, uses
    assert {use.what for use in private_uses(ADAPTER) if use.guarded}  # the scan sees them where they are


def test_no_test_imports_streamlits_internals_but_through_the_adapter() -> None:
    uses = [use for use in in_the_tests() if use.what.startswith("import ")]
    assert not uses, uses
    assert {use.what for use in private_uses(ADAPTER) if use.what.startswith("import ")}  # seen there


def test_no_other_private_streamlit_name_outside_the_adapter_but_those_known() -> None:
    """Another object's `_x` in a module that imports streamlit: Streamlit's, most likely."""
    found = {(use.path, use.what) for use in outside_the_adapter()}
    assert found <= ELSEWHERE, sorted(found - ELSEWHERE)


# `streamlit.<module>` where <module> is one of its internals, its install's files, its frontend's global
# `streamlit.<module>` or a path `streamlit/<module>/...` (not the `.streamlit/` config folder), where
# <module> is one of its internals; its install's files; its frontend's global
NAMED = re.compile(
    r"\bstreamlit\.(__file__|[a-z_]\w*(?:\.[a-z_]\w*)*)|(?<![.\w])streamlit/([a-z_]\w*(?:/[a-z_]\w*)*)"
    r"|\b__streamlit\b"
)


def named_internals(path: Path) -> list[str]:
    """What a file's text names of Streamlit's insides: a module outside PUBLIC_MODULES (a public
    module's own names, and the packages above it, are public), its install's folder, the
    frontend's `window.__streamlit`."""
    parents = {m.rpartition(".")[0] for m in PUBLIC_MODULES}
    packages = PUBLIC_MODULES - {"streamlit"}  # the root's names are its internal modules
    found = []
    for match in NAMED.finditer(path.read_text()):
        dotted, path_form = match[1], match[2]
        if match[0] == "__streamlit" or dotted == "__file__":
            found.append(match[0])
            continue
        name = "streamlit." + (dotted or path_form.replace("/", "."))
        public = name in parents or any(name == m or name.startswith(m + ".") for m in packages)
        if not public and importlib.util.find_spec(".".join(name.split(".")[:2])):
            found.append(match[0])
    return found


def test_no_file_but_the_adapter_names_streamlits_modules_or_files() -> None:
    """Not even in words: a profile's module names, a probe's script, a served page's expected text
    all ask the adapter (RUN_PARTS, option_source, frontend_build, backend_script)."""
    root = APP.parent
    files = [*APP.rglob("*.py"), *APP.rglob("*.js"), *(root / "benchmarks").rglob("*.py")]
    files += [
        *(root / "tests").rglob("*.py"),
        *(root / "deploy").rglob("*.conf*"),
        *(root / "deploy").rglob("*.sh"),
    ]
    found = {str(f.relative_to(root)): named for f in sorted(files) if f != ADAPTER and f not in ADAPTER_TESTS
             if (named := named_internals(f))}  # fmt: skip
    assert found == {"deploy/multihost/nginx-front.conf": ["__streamlit"]}, found


def test_the_front_nginx_announces_the_server_as_the_adapter_does() -> None:
    """The multihost front's nginx writes the adapter's script into every page, as app processes do."""
    conf = (APP.parent / "deploy" / "multihost" / "nginx-front.conf").read_text()
    (line,) = [line for line in conf.splitlines() if "sub_filter '<head>'" in line]
    assert line.strip() == f"sub_filter '<head>' '<head>{streamlit_private.backend_script(None)}';"


def test_the_scan_finds_streamlits_insides_named_in_words(tmp_path: Path) -> None:
    text = tmp_path / "probe.py"
    text.write_text(
        'MODULES = ("streamlit.runtime.forward_msg_cache", "streamlit.web.server")\n'
        "folder = Path(streamlit.__file__).parent\n"
        "from streamlit.testing.v1 import AppTest; import streamlit.components.v1\n"
        'log = "streamlit.log"; page = "<script>window.__streamlit={}</script>"\n'
        "v = streamlit.__version__; shipped_like = 'streamlit.testing'; streamlit.components.v1.html('')\n"
        'frame = "/x/site-packages/streamlit/elements/text.py"; conf = "app/.streamlit/config.toml"\n'
        "from streamlit import config; import streamlit.delta_generator\n"
    )
    assert named_internals(text) == [
        "streamlit.runtime.forward_msg_cache",
        "streamlit.web.server",
        "streamlit.__file__",
        "__streamlit",
        "streamlit/elements/text",
        "streamlit.delta_generator",
    ]


def test_the_check_finds_a_private_use_outside_the_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(__import__(__name__, fromlist=["APP"]), "APP", tmp_path)
    page = tmp_path / "page.py"
    page.write_text(
        "from streamlit import runtime\n"
        "from attention_lab.frame import state\n"
        "def rerun(info):\n"
        "    return info.session._client_state, getattr(info, '_browser_queue'), runtime.get_instance()._x\n"
        "def own(raw):\n"
        "    return state._cast(raw, 1), super()._run()\n"
    )
    assert {(use.what, use.guarded) for use in private_uses(page)} == {
        ("import streamlit.runtime", False),
        ("info.session._client_state", True),
        ("'_browser_queue'", True),
        ("runtime.get_instance()._x", False),
    }


def test_the_check_finds_a_stand_in_that_names_streamlits_parts(tmp_path: Path) -> None:
    """A test's fake AppSession with Streamlit's private names on itself, or naming them in words:
    it would read them without the adapter; the lab's own `self._lock` is its own."""
    fake = tmp_path / "test_fake.py"
    fake.write_text(
        "from types import SimpleNamespace\n"
        "from streamlit.proto.ForwardMsg_pb2 import ForwardMsg\n"
        "from streamlit.testing.v1 import AppTest\n"
        "import streamlit.components.v1\n"
        "class Session:\n"
        '    """Stands in for AppSession._browser_queue."""\n'
        "    def __init__(self):\n"
        "        self._scriptrunner, self._lock = None, None\n"
        "    def _message_enqueued_callback(self):\n"
        "        pass\n"
        "files = SimpleNamespace(_files_by_session_and_coord={})\n"
        "from streamlit import _bottom\n"
        "Session().handle_backmsg = print\n"
    )
    assert {(use.line, use.what) for use in private_uses(fake, root=tmp_path)} == {
        (2, "import streamlit.proto.ForwardMsg_pb2"),
        (6, "'Stands in for AppSession._browser_queue.'"),
        (8, "self._scriptrunner"),
        (9, "def _message_enqueued_callback"),
        (11, "_files_by_session_and_coord="),
        (12, "import streamlit._bottom"),
        (13, "Session().handle_backmsg"),
    }


def test_every_page_tells_the_frontend_where_its_server_is(tmp_path: Path) -> None:
    """An app process (APP_PROCESS) hands /train and / the page with BACKEND_BASE_URL set before
    Streamlit's own scripts; a script file is sent as it is."""
    import urllib.request

    from attention_lab.testing.servers import running_app

    with running_app(tmp_path) as url:
        pages = {
            path: urllib.request.urlopen(url + path, timeout=30).read().decode() for path in ("/train", "/")
        }
        script = next(line for line in pages["/"].split('"') if line.startswith("./static/js/index."))
        js = urllib.request.urlopen(f"{url}/{script[2:]}", timeout=30).read()
    announce = streamlit_private.backend_script(None)
    for page in pages.values():
        assert page.count(announce) == 1
        assert page.index(announce) < page.index('<script type="module"')
    assert announce.encode() not in js and len(js) > 100_000


def test_without_the_static_handler_the_pages_are_sent_as_they_are(
    fresh_check: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.web.server.starlette import starlette_static_routes

    plain = starlette_static_routes.create_streamlit_static_handler
    monkeypatch.setitem(streamlit_private.PARTS, "create_streamlit_static_handler", lambda: False)
    assert streamlit_private.announce_backend() is False
    assert starlette_static_routes.create_streamlit_static_handler is plain


@pytest.mark.parametrize(
    ("part", "install"),
    [
        ("create_streamlit_static_handler", streamlit_private.announce_backend),
        ("ScriptCache.clear", streamlit_private.keep_compiled_pages),
        ("starlette_server._bind_socket", streamlit_private.send_without_delay),
    ],
)
def test_without_its_part_a_server_change_is_not_made(
    fresh_check: None, monkeypatch: pytest.MonkeyPatch, part: str, install: Callable[[], bool]
) -> None:
    monkeypatch.setitem(streamlit_private.PARTS, part, lambda: False)
    assert install() is False


async def nodelay_of_a_connection(listener: socket.socket) -> int:
    """TCP_NODELAY of a connection asyncio accepts on `listener`, as Streamlit's server does."""
    seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def accepted(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.set_result(writer.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=listener)
    async with server:
        host, port = listener.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        value = await asyncio.wait_for(seen, 10)
        writer.close()
    return value


def test_the_server_sends_each_message_at_once() -> None:
    """Streamlit's own socket names no protocol, so asyncio leaves Nagle's algorithm on for its
    connections (a run's second message then waits for the browser's delayed ACK); bound
    through the adapter, every connection has TCP_NODELAY, on the same kind of listener."""
    plain = streamlit_private.server_socket("127.0.0.1", 0, 8, streamlit_own=True)
    assert streamlit_private.send_without_delay() and streamlit_private.send_without_delay()
    bound = streamlit_private.server_socket("127.0.0.1", 0, 8)
    assert (plain.proto, bound.proto) == (0, socket.IPPROTO_TCP)
    assert (bound.getblocking(), bound.get_inheritable()) == (plain.getblocking(), plain.get_inheritable())
    assert asyncio.run(nodelay_of_a_connection(plain)) == 0
    assert asyncio.run(nodelay_of_a_connection(bound)) != 0


def test_on_uvloop_every_connection_has_tcp_nodelay() -> None:
    """uvloop (Streamlit's loop where streamlit[performance] is installed) turns Nagle off on
    every TCP connection it accepts, whichever listener; asyncio's needs the adapter's."""
    import uvloop

    assert streamlit_private.send_without_delay()
    for listener in (
        streamlit_private.server_socket("127.0.0.1", 0, 8, streamlit_own=True),
        streamlit_private.server_socket("127.0.0.1", 0, 8),
    ):
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            assert runner.run(nodelay_of_a_connection(listener)) != 0, listener


def test_compiled_pages_are_kept_where_nothing_watches(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from streamlit import config
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    monkeypatch.setattr(ScriptCache, "clear", ScriptCache.clear)  # Streamlit's own, back after the test
    watcher = config.get_option("server.fileWatcherType")
    assert streamlit_private.keep_compiled_pages() and streamlit_private.keep_compiled_pages()
    page = tmp_path / "page.py"
    page.write_text("x = 1\n")
    cache = ScriptCache()
    try:
        for option, kept in (("none", True), ("poll", False), ("none", True)):
            config.set_option("server.fileWatcherType", option)
            before = cache.get_bytecode(str(page))
            cache.clear()  # what the session manager does when the last session closes
            assert (cache.get_bytecode(str(page)) is before) == kept, option
    finally:
        config.set_option("server.fileWatcherType", watcher)


def test_the_routes_the_proxy_and_probes_reach_are_streamlits_own() -> None:
    """HEALTH, STREAM and UPLOAD are the paths the installed Streamlit serves, and nothing else of
    the app, its templates, the benchmarks or the tests spells one (deploy/multihost's hand-edited
    front config names them for an admin)."""
    from streamlit.web.server.starlette import starlette_routes, starlette_websocket

    assert streamlit_private.HEALTH == "/" + starlette_routes.ROUTE_HEALTH
    assert streamlit_private.UPLOAD == "/" + starlette_routes.BASE_ROUTE_UPLOAD_FILE
    assert streamlit_private.STREAM == "/" + vars(starlette_websocket)["_ROUTE_WEBSOCKET_STREAM"]
    root = APP.parent
    files = [*APP.rglob("*.py"), *APP.rglob("*.template"), *(root / "benchmarks").rglob("*.py")]
    files += [f for f in (root / "tests").rglob("*.py") if f != Path(__file__)]
    route = "_st" + "core"  # this file names the routes through the adapter too
    spelled = [str(f.relative_to(root)) for f in files if f != ADAPTER and route in f.read_text()]
    assert spelled == [] and len(files) > 250
