"""deploy/multihost/: the front nginx config runs for real in Debian's nginx (replica hosts
rewritten to two loopback backends that say who they are, over HTTP and websocket): route
cookie, stickiness for pages and websockets, spread over replicas, failover when one stops.
The systemd units start the contract commands."""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import websockets
from websockets.asyncio.server import ServerConnection, serve
from websockets.http11 import Request, Response

from attention_lab.frame.streamlit_private import HEALTH, STREAM
from tests.support.serve import ROUTE, free_port, in_own_loop
from transformer_core.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
MULTIHOST = ROOT / "deploy" / "multihost"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


class Backend(threading.Thread):
    """A stand-in replica on 127.0.0.1:port: answers every HTTP request and every websocket
    message with its own name, so the test sees which replica nginx chose."""

    def __init__(self, name: str) -> None:
        super().__init__(daemon=True)
        self.name, self.port = name, free_port()
        self.ready, self.loop = threading.Event(), asyncio.new_event_loop()

    def _http(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return None  # go on with the websocket handshake
        return connection.respond(200, f"{self.name} {request.path}\n")

    async def _ws(self, ws: ServerConnection) -> None:
        async for message in ws:
            await ws.send(f"{self.name} {message}")

    async def _main(self) -> None:
        self.stopped = asyncio.Event()
        async with serve(self._ws, "127.0.0.1", self.port, process_request=self._http):
            self.ready.set()
            await self.stopped.wait()

    def run(self) -> None:
        self.loop.run_until_complete(self._main())

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.stopped.set)
        self.join(timeout=5)


def front_config(backends: list[Backend], port: int, run_dir: Path) -> str:
    """nginx-front.conf with its replica list pointed at the backends and `listen` at the
    loopback port, inside a minimal unprivileged main config."""
    site = (MULTIHOST / "nginx-front.conf").read_text()
    servers = re.findall(r"^\s*server \S+:\d+ .*;$", site, flags=re.M)
    assert len(servers) == 2, "the example lists two replica hosts"
    for line, backend in zip(servers, backends, strict=True):
        site = site.replace(line, re.sub(r"server \S+:\d+", f"server 127.0.0.1:{backend.port}", line))
    site = re.sub(r"listen 80;", f"listen 127.0.0.1:{port};", site)
    temp = "\n".join(
        f"{kind}_temp_path {run_dir}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"worker_processes 1;\npid {run_dir}/nginx.pid;\nerror_log {run_dir}/error.log warn;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\naccess_log {run_dir}/access.log;\n{temp}\n{site}\n}}\n"
    )


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Backend]]]:
    backends = [Backend("replica-a"), Backend("replica-b")]
    for b in backends:
        b.start()
        assert b.ready.wait(10)
    run_dir = tmp_path_factory.mktemp("front")
    port = free_port()
    conf = run_dir / "nginx.conf"
    conf.write_text(front_config(backends, port, run_dir))
    check = subprocess.run([NGINX, "-t", "-p", str(run_dir), "-c", str(conf)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    proc = subprocess.Popen([NGINX, "-p", str(run_dir), "-c", str(conf), "-g", "daemon off;"])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 10
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=1)
            break
        except (urllib.error.URLError, ConnectionError):
            assert time.monotonic() < deadline, "nginx did not answer"
            time.sleep(0.1)
    yield url, backends
    proc.terminate()
    proc.wait(timeout=10)
    for b in backends:
        b.stop()


def get(url: str, cookie: str | None = None) -> tuple[int, dict[str, str], list[str]]:
    """(status, headers with lower-case names, body lines) of one request."""
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        headers = {k.lower(): v for k, v in response.headers.items()}
        return response.status, headers, response.read().decode().splitlines()


def replica(body: list[str]) -> str:
    return body[0].split()[0]


def test_a_browser_gets_a_route_cookie_and_sticks_to_one_replica(front: tuple[str, list[Backend]]) -> None:
    url, _ = front
    status, headers, body = get(url + "/gpt?text=hello")
    assert status == 200
    cookie = re.match(rf"{ROUTE}=([0-9a-f]{{32}}); Path=/; HttpOnly; SameSite=Lax", headers["set-cookie"])
    assert cookie, headers["set-cookie"]
    first = replica(body)
    assert body[0] == f"{first} /gpt?text=hello"  # path and query reach the replica unchanged
    for path in ("/", "/reversal", HEALTH, "/static/app.js"):
        status, headers, again = get(url + path, cookie=f"{ROUTE}={cookie[1]}")
        assert replica(again) == first
        assert "set-cookie" not in headers  # the cookie is set once, on the first visit


def test_many_browsers_spread_over_both_replicas(front: tuple[str, list[Backend]]) -> None:
    url, backends = front
    seen = {replica(get(url + "/", cookie=f"{ROUTE}=browser{i:02d}")[2]) for i in range(16)}
    assert seen == {b.name for b in backends}


def test_the_websocket_is_proxied_to_the_replica_of_the_cookie(front: tuple[str, list[Backend]]) -> None:
    url, _ = front
    cookie = f"{ROUTE}=websocket-browser"
    page_replica = replica(get(url + "/", cookie=cookie)[2])

    async def talk() -> list[str]:
        ws_url = url.replace("http://", "ws://") + STREAM
        async with websockets.connect(ws_url, additional_headers={"Cookie": cookie}) as ws:
            replies = []
            for message in ("one", "two"):
                await ws.send(message)
                replies.append(await ws.recv())
            return replies

    assert in_own_loop(talk()) == [f"{page_replica} one", f"{page_replica} two"]


def test_a_stopped_replica_fails_over_to_the_other(tmp_path: Path) -> None:
    backends = [Backend("replica-a"), Backend("replica-b")]
    for b in backends:
        b.start()
        assert b.ready.wait(10)
    port = free_port()
    conf = tmp_path / "nginx.conf"
    conf.write_text(front_config(backends, port, tmp_path))
    proc = subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(conf), "-g", "daemon off;"])
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=1)
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline
                time.sleep(0.1)
        cookies = [f"{ROUTE}=failover{i}" for i in range(12)]
        on_a = [c for c in cookies if replica(get(url + "/", cookie=c)[2]) == "replica-a"]
        assert on_a, "some browsers are on replica-a"
        backends[0].stop()
        for c in on_a:  # their replica is gone: nginx moves them to the other one
            status, _, body = get(url + "/", cookie=c)
            assert (status, replica(body)) == (200, "replica-b")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        backends[1].stop()


def unit_exec(name: str) -> list[str]:
    text = (MULTIHOST / name).read_text().replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


def test_the_worker_unit_starts_the_contract_worker_command() -> None:
    argv = unit_exec("attention-lab-worker@.service")
    assert argv[1:4] == ["-m", "transformer_core", "worker"]
    args = build_parser().parse_args(argv[3:])
    assert (args.command, args.device) == ("worker", "auto")


def test_the_app_unit_starts_the_lab_command_on_its_instance_port() -> None:
    argv = unit_exec("attention-lab-app@.service")
    assert argv[0] == "/opt/attention-lab/.venv/bin/attention-lab" and argv[1].startswith("--server.")
    assert argv[argv.index("--server.port") + 1] == "%i"
    env = (MULTIHOST / "lab.env.example").read_text()
    assert "ATTENTION_LAB_REDIS_URL=redis://" in env and "STREAMLIT_SERVER_COOKIE_SECRET=" in env
