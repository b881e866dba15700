"""deploy/serve.sh (the checkout's wrapper of `attention-lab serve`) for real: two Streamlit
processes behind Debian's nginx on a free loopback port; pages, websocket sessions
(Streamlit's own protocol) and a headless Chromium go through nginx; SIGTERM leaves no
process behind; missing pieces are named."""

from __future__ import annotations

import gzip
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from attention_lab import APP_PROCESS
from attention_lab.frame import streamlit_private
from attention_lab.frame.streamlit_dom import part
from attention_lab.frame.streamlit_private import HEALTH, STREAM
from tests.support.browser import assert_no_exception, wait_for_app
from tests.support.serve import (
    BASH,
    HOME,
    ROOT,
    ROUTE,
    SERVE,
    Served,
    command_line,
    free_port,
    get,
    in_own_loop,
    process_tree,
    serving,
    streamlit_session,
    upstream_of,
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """serve.sh --workers 2 on a free port; the last test of this file stops it."""
    with serving(tmp_path_factory.mktemp("serve")) as served:
        yield served


def test_pages_load_through_nginx(served: Served) -> None:
    status, headers, cookies = get(served.url + HEALTH)
    assert status == 200
    assert re.match(r"127\.0\.0\.1:\d+$", headers["X-Upstream"]), headers
    assert any(c.startswith(f"{ROUTE}=") for c in cookies), f"no route cookie set: {cookies}"
    for link in ("/", "/gpt?text=hello", "/basics"):
        status, headers, _ = get(served.url + link)
        assert status == 200, link
    page = urllib.request.urlopen(served.url + "/gpt?text=hello", timeout=30).read().decode()
    assert "<head>" + streamlit_private.backend_script(None) in page
    status, _, cookies = get(served.url + "/", cookie=f"{ROUTE}=known")
    assert not any(c.startswith(f"{ROUTE}=") for c in cookies), "a browser with a route keeps it"


def test_static_files_come_from_nginx_compressed_and_cached(served: Served) -> None:
    """Streamlit's hashed JS and the lab's charts.js are sent by nginx from RUN_DIR (no app
    process answers: no X-Upstream), gzipped when asked, the hashed ones cached for a year."""
    html = urllib.request.urlopen(served.url + "/", timeout=30).read().decode()
    script = re.search(r'src="\.?/?(static/js/index\.[^"]+\.js)"', html)
    assert script, html[:500]
    request = urllib.request.Request(f"{served.url}/{script.group(1)}", headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as response:
        body, headers = response.read(), response.headers
    assert "X-Upstream" not in headers and headers["Content-Encoding"] == "gzip"
    assert headers["Content-Type"] == "application/javascript"  # a module script needs a JS type
    assert "immutable" in headers["Cache-Control"] and "max-age=31536000" in headers["Cache-Control"]
    original = streamlit_private.frontend_build() / script.group(1)
    assert gzip.decompress(body) == original.read_bytes() and len(body) < original.stat().st_size / 2
    status, headers, _ = get(served.url + "/app/static/charts.js?v=1")
    assert status == 200 and "X-Upstream" not in headers and "max-age=86400" in headers["Cache-Control"]
    charts = urllib.request.urlopen(served.url + "/app/static/charts.js", timeout=30).read()
    assert charts == (ROOT / "app" / "static" / "charts.js").read_bytes()
    for unversioned in ("charts/axes.js", "streamlit_dom.js"):  # imported under fixed names: revalidated
        with urllib.request.urlopen(f"{served.url}/app/static/{unversioned}", timeout=30) as response:
            body, headers = response.read(), response.headers
        assert "X-Upstream" not in headers and headers["Cache-Control"] == "no-cache"
        assert body == (ROOT / "app" / "static" / unversioned).read_bytes()


def test_a_browser_sticks_to_one_worker_and_browsers_spread(served: Served) -> None:
    worker_ports = set(re.findall(r"ports ([\d ]+)", "".join(served.output))[0].split())
    assert len(worker_ports) == 2, served.output
    seen: dict[str, set[str]] = {}
    for i in range(12):
        cookie = f"{ROUTE}=browser-{i}"
        upstreams = {upstream_of(served.url, cookie) for _ in range(3)}
        upstreams.add(in_own_loop(streamlit_session(served.url, cookie, "/basics"))[0] or "none")
        assert len(upstreams) == 1, f"{cookie} went to several workers: {upstreams}"
        seen.setdefault(upstreams.pop(), set()).add(cookie)
    assert {u.rsplit(":", 1)[1] for u in seen} == worker_ports, f"12 browsers used only {sorted(seen)}"


def test_a_websocket_session_runs_pages_through_nginx(served: Served) -> None:
    for link in ("/reversal?text=attention", "/variance?d_k=16"):
        upstream, exceptions, elements = in_own_loop(streamlit_session(served.url, f"{ROUTE}=ws", link))
        assert upstream, "no X-Upstream on the websocket handshake"
        assert not exceptions, f"{link}: {exceptions}"
        assert elements > 5, f"{link} drew only {elements} elements"
    log = (served.run_dir / "logs" / "access.log").read_text()
    assert re.search(rf'"GET {STREAM} HTTP/1.1" 101 .*route=ws ', log), log[-2000:]


def test_chromium_renders_a_deep_link_through_nginx(served: Served, browser: Browser, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(90_000)
        page.goto(served.url + "/reversal?text=attention")
        wait_for_app(page)
        assert_no_exception(page)
        page.screenshot(path=str(tmp_path / "reversal.png"), full_page=True)
        assert "attention" in page.locator(part("main")).inner_text().lower()
        route = [c["value"] for c in context.cookies() if c["name"] == ROUTE]
        assert route, "the browser got no route cookie"
    finally:
        context.close()
    log = (served.run_dir / "logs" / "access.log").read_text()
    assert "/reversal" + HEALTH not in log  # the page named its server: no probe of /reversal/
    # nginx logs a websocket when it closes, a moment after the page does
    pattern = re.compile(rf'"GET {STREAM} HTTP/1.1" 101 .*route={route[0]} ')
    deadline = time.monotonic() + 30
    while not pattern.search(log := (served.run_dir / "logs" / "access.log").read_text()):
        assert time.monotonic() < deadline, log[-2000:]
        time.sleep(0.2)


def test_a_killed_app_process_heals_its_users_come_back_and_its_training_goes_on(
    served: Served, browser: Browser
) -> None:
    """Issue 27: `kill -9` one app process. Its browser's page comes back (nginx sends it to the
    other process at once, the view from the URL), serve.sh restarts the process on its port,
    and the training it started goes on: a run process lives in a session of its own."""
    from attention_lab.serving import RunProgress, open_run_store

    route = "chaos"
    port = upstream_of(served.url, f"{ROUTE}={route}").rsplit(":", 1)[1]
    victim = next(p for p in process_tree(served.proc.pid) if f"--server.port {port} " in command_line(p))
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    context.add_cookies([{"name": ROUTE, "value": route, "url": served.url}])
    queue, run_id = open_run_store(served.run_dir / "runs", 1), None
    try:
        page = context.new_page()
        page.set_default_timeout(90_000)
        page.goto(served.url + "/train")
        wait_for_app(page)
        page.locator(part("main")).get_by_role("button", name="Start").click()
        progress = page.locator(part("progress"))
        progress.filter(has_text="running").wait_for()
        run_id = re.search(r"run=(run-[0-9a-f]+)", page.url).group(1)
        page.goto(served.url + "/gpt?text=hello&layer=1&head=2")
        wait_for_app(page)

        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        assert not upstream_of(served.url, f"{ROUTE}={route}").endswith(f":{port}")  # nginx fails over
        page.reload()  # the student's next page: the other process answers at once
        wait_for_app(page)
        assert_no_exception(page)
        back_after = time.monotonic() - killed
        assert "layer=1" in page.url and "head=2" in page.url and "text=hello" in page.url
        print(f"the killed process's page came back after {back_after:.1f} s")

        progress_file = RunProgress(queue.folder(run_id))
        progress_file.refresh()
        step = progress_file.step
        deadline = time.monotonic() + 120
        while not (
            any(f"--server.port {port} " in command_line(p) for p in process_tree(served.proc.pid))
            and upstream_of(served.url, f"{ROUTE}={route}").endswith(f":{port}")
        ):
            assert time.monotonic() < deadline, "serve.sh did not restart the killed app process"
            time.sleep(0.5)
        print(f"serve.sh restarted it after {time.monotonic() - killed:.1f} s")
        assert served.proc.poll() is None  # serve.sh itself goes on
        # The run goes on: it steps on (a niced run process on a loaded box may take a while to
        # reach its first step), or it is done.
        deadline = time.monotonic() + 120
        while True:
            progress_file.refresh()
            info = queue.info(run_id)
            assert info.status in ("running", "done"), info
            if progress_file.step > step or info.status == "done":
                break
            assert time.monotonic() < deadline, f"the run made no step after the kill: {progress_file}"
            time.sleep(0.5)
    finally:
        context.close()
        if run_id is not None and (info := queue.info(run_id)) is not None and info.active:
            queue.stop(run_id)  # the run this test started, stopped


def test_sigterm_stops_every_process(served: Served) -> None:
    """Last in this file: it stops the module's serve.sh."""
    tree = process_tree(served.proc.pid) - {served.proc.pid}
    names = {pid: command_line(pid) for pid in tree}
    assert sum(f"-m {APP_PROCESS} run {HOME} " in c for c in names.values()) == 2, names
    assert any("nginx: master" in c for c in names.values()), names
    served.proc.send_signal(signal.SIGTERM)
    rest = served.proc.communicate(timeout=60)[0]
    assert served.proc.returncode == 0, rest
    assert "stopping nginx and 2 app processes" in rest, rest
    left = {pid: names[pid] for pid in tree if command_line(pid)}
    assert not left, f"still running after SIGTERM: {left}"
    assert not (served.run_dir / "nginx.pid").exists(), "nginx did not shut down cleanly"


def run_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(SERVE), *args], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env
    )


def test_missing_nginx_is_named(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with the app's python and coreutils but without nginx
    bin_dir.mkdir()
    python = bin_dir / "python3"  # a script, not a link: a virtual environment's python stays in it
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    for tool in ("nproc", "mktemp", "setsid", "dirname"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True)
        (bin_dir / tool).symlink_to(found.stdout.strip())
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    result = run_serve("--port", str(free_port()), env=env)
    assert result.returncode == 2, result.stderr
    if Path("/usr/sbin/nginx").exists():  # installed, but not on this PATH
        assert "nginx is installed as /usr/sbin/nginx, but /usr/sbin is not on your PATH" in result.stderr
    else:
        assert "nginx is not installed" in result.stderr, result.stderr
        assert "apt-get install -y nginx" in result.stderr, result.stderr
    assert "starting" not in result.stderr, "nothing may start without nginx"
    result = run_serve("--port", str(free_port()), env={**env, "NGINX": "/nonexistent/nginx"})
    assert result.returncode == 2
    assert "NGINX=/nonexistent/nginx is not an executable" in result.stderr, result.stderr


def test_bad_arguments_and_a_busy_port_are_named() -> None:
    result = run_serve("--workers", "0")
    assert result.returncode == 2 and "--workers must be a positive whole number" in result.stderr
    result = run_serve("--bogus")
    assert result.returncode == 2 and "unknown argument '--bogus'" in result.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = run_serve("--workers", "1", "--port", str(busy.getsockname()[1]))
    assert result.returncode == 2, result.stderr
    assert "cannot listen on 127.0.0.1:" in result.stderr and "--port" in result.stderr, result.stderr
    assert "starting" not in result.stderr, "nothing may start when the port is taken"
    result = run_serve("--workers", "1", env={**os.environ, "ATTENTION_LAB_RUN_NICE": "high"})
    assert result.returncode == 2 and "ATTENTION_LAB_RUN_NICE: 'high' is not a whole number" in result.stderr
    assert "starting" not in result.stderr, "nothing may start with a bad setting"


def test_help() -> None:
    result = run_serve("--help")
    assert result.returncode == 0 and "--workers N" in result.stdout


@pytest.mark.parametrize(
    ("address", "base"),
    [
        ("0.0.0.0", "http://127.0.0.1:8080"),
        ("::", "http://[::1]:8080"),
        ("fd00::7", "http://[fd00::7]:8080"),
        ("10.1.2.3", "http://10.1.2.3:8080"),
    ],
)
def test_the_supervisor_probes_streamlits_health_route_where_it_listens(address: str, base: str) -> None:
    from attention_lab.deploy.serve_support import health_url

    assert health_url(address, 8080) == base + HEALTH
