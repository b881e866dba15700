"""The wheel as a user gets it: built from this checkout, installed with its runtime
dependencies (pinned by constraints.txt, CPU torch) into a fresh venv outside the checkout,
then run from a folder that is not the checkout with HOME and XDG_DATA_HOME of its own: no
test tools come with it, `attention-lab check` passes, the app draws its maps in Chromium,
the shipped checkpoints are package data, a run trained through /train lands in the per-user
data folder, and `attention-lab serve` answers through nginx."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Browser, Page, expect

from attention_lab.frame.streamlit_dom import part
from attention_lab.frame.streamlit_private import HEALTH
from tests.support.browser import assert_no_exception, open_page, wait_for_app
from tests.support.serve import (
    ROUTE,
    command_line,
    free_port,
    get,
    in_own_loop,
    process_tree,
    streamlit_session,
)

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints.txt"
TORCH = "torch==2.13.0"  # the CPU build: pip finds it in the local wheel folder (pip config find-links)
#: what the `test` extra brings and a user of the app must not get
TEST_TOOLS = ("pytest", "playwright", "ruff", "hypothesis", "oidc-provider-mock", "axe-playwright-python")
SHIPPED = sorted(p.parent.name for p in (ROOT / "checkpoints").glob("*/checkpoint.json"))

#: per drawn chart canvas: how many colours (sampled) and what share of pixels differ from
#: its background (the top-left pixel); a blank canvas has one colour and no ink
CANVAS_INK = """(canvases) => canvases.map((canvas) => {
    if (!canvas.width || !canvas.height) return { colours: 0, inked: 0 };
    const d = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    const colours = new Set();
    let inked = 0;
    for (let i = 0; i < d.length; i += 4) {
        const off = Math.abs(d[i] - d[0]) + Math.abs(d[i + 1] - d[1]) + Math.abs(d[i + 2] - d[2]);
        if (off > 30) inked++;
        if (i % 64 === 0) colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    }
    return { colours: colours.size, inked: inked / (d.length / 4) };
})"""


@dataclass(frozen=True)
class Installed:
    """The wheel, the venv it went into and the user's folder (cwd, HOME, XDG_*) to run it from."""

    wheel: Path
    venv: Path
    home: Path

    @property
    def data_home(self) -> Path:
        return self.home / "data"

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def env(self) -> dict[str, str]:
        """A user's environment: none of the suite's settings (its runs folder, PYTHONPATH to
        the checkout), the venv first on PATH and nginx's /usr/sbin last."""
        drop = ("ATTENTION_LAB_", "STREAMLIT_", "PYTHON", "VIRTUAL_ENV", "XDG_")
        env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
        return env | {
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.data_home),
            "XDG_CONFIG_HOME": str(self.home / "config"),
            "XDG_CACHE_HOME": str(self.home / "cache"),
            "VIRTUAL_ENV": str(self.venv),
            "PATH": os.pathsep.join([str(self.venv / "bin"), env.get("PATH", ""), "/usr/sbin"]),
            "ATTENTION_LAB_DEVICE": "cpu",
            # the suite's browser and servers keep a 2-core box busy: a run that napped for them would be slow
            "ATTENTION_LAB_RUN_YIELD": "0",
        }

    def run(self, *command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """Run a command of the venv from the user's folder; its output is captured."""
        return subprocess.run(
            command, cwd=self.home, env=self.env(), capture_output=True, text=True, timeout=timeout
        )


def build_wheel(out: Path) -> Path:
    """The wheel, built from an sdist of the checkout (as `python -m build` does by default):
    nothing stale in the checkout's build/ folder can reach it."""
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("attention_lab-*.whl")
    return wheel


def install(wheel: Path, folder: Path) -> Path:
    """A fresh venv (no system site-packages) with the wheel and its runtime dependencies at
    the versions constraints.txt pins; pip keeps its own config (the local wheel folder) and cache."""
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    subprocess.run(
        [str(folder / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
         "-c", str(CONSTRAINTS), str(wheel), TORCH],
        check=True, cwd=folder.parent, env=env, capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    return folder


def megabytes(path: Path) -> int:
    return int(subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True).stdout.split()[0])


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Build and install once for the whole module: building the venv takes a minute or more."""
    base = tmp_path_factory.mktemp("wheel")
    assert ROOT not in base.parents
    started = time.monotonic()
    wheel = build_wheel(base / "dist")
    print(f"\nwheel: {wheel.name}, {wheel.stat().st_size / 1e6:.1f} MB ({time.monotonic() - started:.0f} s)")
    started = time.monotonic()
    folder = install(wheel, base / "venv")
    took = time.monotonic() - started
    print(f"venv (runtime deps, CPU torch): {megabytes(folder)} MB installed ({took:.0f} s)")
    home = base / "user"
    home.mkdir()
    return Installed(wheel, folder, home)


# ---------------------------------------------------------------- processes the tests start


@contextmanager
def started(installed: Installed, *command: str, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Start a command of the venv from the user's folder, output to `log`; on leaving,
    SIGTERM it and fail if any process it started outlives it (those are killed, by id)."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=installed.home, env=installed.env(), stdout=out, stderr=out)
    try:
        yield proc
    finally:
        left = stop(proc)
    assert not left, f"still running after {command[0]} stopped: {left}"


def stop(proc: subprocess.Popen[bytes]) -> dict[int, str]:
    """SIGTERM `proc`, wait for it, and return (after killing them) those of its processes
    that are still running 10 s later."""
    tree = {pid: command_line(pid) for pid in process_tree(proc.pid) - {proc.pid}}
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while True:
        left = {pid: cmd for pid, cmd in tree.items() if cmd and command_line(pid) == cmd}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 240) -> None:
    """Wait until `url` answers its health check; fail with the end of `log` if `proc` exits first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url + HEALTH, timeout=2)
            return
        except OSError:
            if proc.poll() is not None:
                problem = f"exited with {proc.returncode}"
            elif time.monotonic() > deadline:
                problem = f"not healthy after {timeout:.0f} s"
            else:
                time.sleep(0.5)
                continue
            raise AssertionError(f"{problem}:\n{log.read_text()[-4000:]}") from None


@pytest.fixture(scope="module")
def app_url(installed: Installed) -> Iterator[str]:
    """`attention-lab --server.port P --server.headless true`, one process for the module's browser tests."""
    port = free_port()
    log = installed.home / "app.log"
    with started(installed, installed.bin("attention-lab"), "--server.port", str(port),
                 "--server.headless", "true", "--server.address", "127.0.0.1", log=log) as proc:  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, proc, log)
        yield url


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()


# ---------------------------------------------------------------- the tests


def test_no_test_tools_come_with_the_app(installed: Installed) -> None:
    listed = installed.run(installed.bin("python"), "-m", "pip", "list", "--format=json")
    assert listed.returncode == 0, listed.stderr
    names = {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(listed.stdout)}
    assert "attention-lab" in names and "streamlit" in names
    assert not {t for t in TEST_TOOLS if t in names}, names
    assert names["torch"].startswith("2.13.0"), names["torch"]
    assert "uvloop" in names  # streamlit[performance]: the server's event loop


def test_check_passes(installed: Installed) -> None:
    done = installed.run(installed.bin("attention-lab"), "check")
    assert done.returncode == 0, done.stdout + done.stderr
    as_json = installed.run(installed.bin("attention-lab"), "check", "--json")
    assert as_json.returncode == 0, as_json.stdout + as_json.stderr
    assert json.loads(as_json.stdout)["event_loop"]["name"] == "uvloop"


def test_shipped_checkpoints_are_package_data(installed: Installed) -> None:
    done = installed.run(installed.bin("python"), "-m", "transformer_core", "checkpoints", "--json")
    assert done.returncode == 0, done.stderr
    listed = sorted(c["name"] for c in json.loads(done.stdout)["checkpoints"])
    assert SHIPPED and listed == SHIPPED
    kept = (  # /heads 11 reads the shipped profiles, it does not compute them again
        "from transformer_core.interp.profiles import stored_profiles as s\n"
        "from transformer_core.io import load_checkpoint as c\n"
        "print(s(c('gpt-rope')) is not None)"
    )
    done = installed.run(installed.bin("python"), "-c", kept)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


def assert_maps_drawn(page: Page) -> None:
    """Every drawn chart canvas has ink (a blank one has one colour and none), and one is a map:
    a fifth of it painted or more (the explorers' charts measured 8-66%)."""
    drawn = page.locator(".lab-chart[data-drawn] canvas")
    drawn.first.wait_for(timeout=60_000)
    wait_for_app(page)
    ink = drawn.evaluate_all(CANVAS_INK)
    assert ink and all(c["colours"] > 8 and c["inked"] > 0.02 for c in ink), ink
    assert max(c["inked"] for c in ink) > 0.2, ink


@pytest.mark.parametrize("link", ["/reversal", "/gpt"])
def test_explorers_draw_their_maps(page: Page, app_url: str, link: str) -> None:
    open_page(page, app_url + link)
    assert_maps_drawn(page)
    assert_no_exception(page)


def test_a_run_trained_through_train_lands_in_the_user_data_folder(
    page: Page, app_url: str, installed: Installed
) -> None:
    open_page(page, app_url + "/train")
    steps = page.get_by_label("Steps")
    if not steps.is_visible():
        page.get_by_text("Model shape and optimiser").click()
    steps.fill("10")  # the fewest: the run is done in seconds
    steps.press("Enter")
    wait_for_app(page)
    page.locator(part("main")).get_by_role("button", name="Start").click()
    expect(page.locator(part("progress"))).to_contain_text("done", timeout=180_000)
    assert_no_exception(page)
    run_id = parse_qs(urlparse(page.url).query)["run"][0]
    assert re.fullmatch(r"run-[0-9a-f]{16,}", run_id), run_id
    folder = installed.data_home / "attention-lab" / "runs" / run_id
    assert (folder / "checkpoint.json").is_file() and (folder / "model.safetensors").is_file(), sorted(
        p.relative_to(installed.home) for p in installed.home.rglob("*") if "run-" in str(p)
    )


def test_serve_answers_through_nginx(installed: Installed) -> None:
    port = free_port()
    log = installed.home / "serve.log"
    url = f"http://127.0.0.1:{port}"
    with started(installed, installed.bin("attention-lab"), "serve", "--workers", "2", "--port", str(port),
                 log=log) as proc:  # fmt: skip
        wait_healthy(url, proc, log)
        status, headers, cookies = get(url + HEALTH)
        assert status == 200 and re.match(r"127\.0\.0\.1:\d+$", headers["X-Upstream"]), headers
        route = next(c.split(";")[0] for c in cookies if c.startswith(f"{ROUTE}="))
        status, _, _ = get(url + "/reversal", route)
        assert status == 200
        _, exceptions, elements = in_own_loop(streamlit_session(url, route, "/reversal?text=attention"))
        assert not exceptions and elements > 0, exceptions
