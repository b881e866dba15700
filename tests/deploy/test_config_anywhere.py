"""`streamlit run /abs/path/app/Home.py` started from another folder runs with the app's own
config (app/.streamlit/config.toml), not only when started from the checkout.

Streamlit reads the global, the working directory's and then the main script's folder's
.streamlit/config.toml, the last winning: so the app's file must be found beside Home.py
whatever the working directory. Proven three ways: Streamlit's own lookup names that file for
Home.py; a server started from a temporary folder shows the file's settings in what it
serves (static files on, toolbarMode "viewer" and no usage stats in the session's config
message); and runner.postScriptGC, which has no effect on the wire, is read inside that very
server process by a sitecustomize probe, which also sees that no gc.collect(2) follows a page
run. A control server (a script without a config beside it) shows the probe does see
Streamlit's default collection.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import tomllib
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import websockets

from attention_lab.frame import streamlit_private
from attention_lab.frame.streamlit_private import HEALTH, STREAM, BackMsg, Config, ForwardMsg
from tests.support.serve import free_port, in_own_loop

ROOT = Path(__file__).resolve().parents[2]
HOME_PY = ROOT / "app" / "Home.py"
APP_CONFIG = ROOT / "app" / ".streamlit" / "config.toml"

#: runs in every Python process started with PROBE_OUT set: records the config the server
#: parsed (once its Runtime exists) and every gc.collect that Streamlit's script runner makes
PROBE = """
import gc, json, os, sys, threading, time

OUT = os.environ.get("PROBE_OUT")


def _record(event):
    with open(OUT, "a") as f:
        f.write(json.dumps(event) + "\\n")


if OUT:
    _collect = gc.collect

    def collect(generation=2):
        caller = sys._getframe(1).f_code
        if caller.co_filename.endswith(os.path.join("scriptrunner", "script_runner.py")):
            _record({"event": "gc", "generation": generation, "caller": caller.co_name})
        return _collect(generation)

    gc.collect = collect

    def _watch():
        import urllib.request

        while True:  # until the server answers: its config parsed, its imports done
            try:
                urllib.request.urlopen(os.environ["PROBE_HEALTH"], timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        if "streamlit" not in sys.modules:  # a process the server started (a run's), not the server
            return
        from attention_lab.frame import streamlit_private

        if not streamlit_private.runtime_exists():
            return
        value, where = streamlit_private.option_source("runner.postScriptGC")
        _record({"event": "config", "postScriptGC": value, "where": where, "cwd": os.getcwd(),
                 "files": streamlit_private.config_files()})

    threading.Thread(target=_watch, daemon=True).start()
"""


def test_streamlit_picks_the_apps_config_for_home_py() -> None:
    """Streamlit's lookup for Home.py ends with app/.streamlit/config.toml (the last file
    wins), and that file sets what the other tests observe."""
    files = streamlit_private.config_files(HOME_PY)
    assert Path(files[-1]) == APP_CONFIG, files
    settings = tomllib.loads(APP_CONFIG.read_text())
    assert settings["runner"]["postScriptGC"] is False
    assert settings["server"]["enableStaticServing"] is True
    assert settings["client"]["toolbarMode"] == "viewer"
    assert settings["browser"]["gatherUsageStats"] is False


@contextmanager
def server(script: Path, cwd: Path, probe_out: Path) -> Iterator[str]:
    """`streamlit run SCRIPT --server.port P --server.headless true` from `cwd`, the editable
    install importing the app (no PYTHONPATH to the checkout), HOME inside `cwd`, the probe on
    the path; yields its URL once healthy and stops exactly that process."""
    probe = cwd / "probe"
    probe.mkdir(exist_ok=True)
    (probe / "sitecustomize.py").write_text(PROBE)
    home = cwd / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "STREAMLIT_"))}
    env |= {"PYTHONPATH": str(probe), "PROBE_OUT": str(probe_out), "HOME": str(home)}
    env |= {"ATTENTION_LAB_DEVICE": "cpu"}
    port = free_port()
    env["PROBE_HEALTH"] = f"http://127.0.0.1:{port}{HEALTH}"
    log = cwd / f"{script.stem}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
             "--server.headless", "true"],
            cwd=cwd, env=env, stdout=out, stderr=out,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(url + HEALTH, timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"streamlit did not start:\n{log.read_text()[-3000:]}") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def run_page(url: str) -> tuple[Config, list[str]]:
    """Open a session on the server's websocket and run its main page to the end, as a
    browser does: returns the session's config message and the exceptions drawn."""
    async with websockets.connect(
        url.replace("http://", "ws://") + STREAM,
        subprotocols=[websockets.Subprotocol("streamlit")],
        origin=websockets.Origin(url),
        max_size=None,
    ) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = ""
        msg.rerun_script.page_name = ""
        await ws.send(msg.SerializeToString())
        config, exceptions = None, []
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await asyncio.wait_for(ws.recv(), 120))
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                config = fwd.new_session.config
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                if fwd.delta.new_element.WhichOneof("type") == "exception":
                    exceptions.append(fwd.delta.new_element.exception.message)
            elif kind == "script_finished":
                assert fwd.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY, fwd
                assert config is not None
                return config, exceptions


def probe_events(path: Path, wanted: str, timeout: float = 10) -> list[dict[str, Any]]:
    """The probe's events of kind `wanted`, waiting up to `timeout` s for the first: the
    collection runs after script_finished is sent."""
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        events = [e for e in map(json.loads, lines) if e["event"] == wanted]
        if events or time.monotonic() > deadline:
            return events
        time.sleep(0.2)


def test_home_py_from_another_folder_runs_with_the_apps_config(tmp_path: Path) -> None:
    probe_out = tmp_path / "probe.jsonl"
    with server(HOME_PY, tmp_path, probe_out) as url:
        with urllib.request.urlopen(url + "/app/static/charts.js", timeout=30) as response:
            # server.enableStaticServing (off by default: the page's shell comes back instead)
            assert response.read() == (ROOT / "app" / "static" / "charts.js").read_bytes()
        config, exceptions = in_own_loop(run_page(url))
        assert not exceptions, exceptions
        assert config.toolbar_mode == Config.ToolbarMode.VIEWER  # the default is AUTO
        assert config.gather_usage_stats is False  # the default is True
        (parsed,) = probe_events(probe_out, "config")
        time.sleep(2)  # the post-run collection, if any, follows script_finished
        collections = probe_events(probe_out, "gc", timeout=0)
    assert parsed["cwd"] == str(tmp_path) and Path(parsed["files"][-1]) == APP_CONFIG, parsed
    assert parsed["postScriptGC"] is False and Path(parsed["where"]) == APP_CONFIG, parsed
    assert collections == [], collections


def test_the_probe_sees_streamlits_default_collection(tmp_path: Path) -> None:
    """The control: a script with no config beside it runs gc.collect(2) after each run,
    and the probe records it (so its silence above means something)."""
    script = tmp_path / "plain" / "plain.py"
    script.parent.mkdir()
    script.write_text('import streamlit as st\n\nst.title("plain")\n')
    probe_out = tmp_path / "probe.jsonl"
    with server(script, tmp_path, probe_out) as url:
        with urllib.request.urlopen(url + "/app/static/charts.js", timeout=30) as response:
            assert b"<html" in response.read()  # the page's shell, as for any unknown path: no static files
        config, _ = in_own_loop(run_page(url))
        assert config.toolbar_mode == Config.ToolbarMode.AUTO
        (parsed,) = probe_events(probe_out, "config")
        collections = probe_events(probe_out, "gc")
    assert parsed["postScriptGC"] is True and parsed["where"] == "<default>", parsed
    assert [c["generation"] for c in collections] == [2], collections
