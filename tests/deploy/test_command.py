"""The `attention-lab` console command for real, started from a temporary working directory
outside the checkout: `check` reports the settings, folders, device and ways of serving as
parsed (and exits 2 naming a wrong setting), the bare command starts Streamlit on the
installed package's Home.py with the app's own config in force, `serve` runs two app
processes behind nginx, and `python -m attention_lab` is the same command."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
import torch

from attention_lab import APP_PROCESS
from attention_lab.frame.streamlit_private import HEALTH
from tests.support.serve import (
    HOME,
    ROUTE,
    command_line,
    console_command,
    free_port,
    get,
    process_tree,
    serving,
)
from transformer_core.io import CHECKPOINTS_DIR, list_checkpoints

SUBCOMMANDS = ("serve", "worker", "check")
WAYS = {"one_box", "class", "several_boxes", "gpu", "sign_in"}


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def lab_env(tmp_path: Path, **settings: str) -> dict[str, str]:
    """This environment without any ATTENTION_LAB_* setting of the caller's, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTENTION_LAB_")}
    env.update(ATTENTION_LAB_DEVICE="cpu", ATTENTION_LAB_RUNS_DIR=str(tmp_path / "runs"))
    return {**env, **settings}


def test_help_lists_the_commands_and_python_m_is_the_same_command(tmp_path: Path) -> None:
    by_module = run([sys.executable, "-m", "attention_lab", "--help"], tmp_path)
    assert by_module.returncode == 0, by_module.stderr
    for name in SUBCOMMANDS:
        assert f"attention-lab {name}" in by_module.stdout, by_module.stdout
    assert "--server.port" in by_module.stdout  # the bare command passes Streamlit flags on
    assert run([*console_command(), "--help"], tmp_path).stdout == by_module.stdout
    wrong = run([*console_command(), "srve"], tmp_path)
    assert wrong.returncode == 2 and "unknown command 'srve'" in wrong.stderr, wrong.stderr


@pytest.mark.parametrize(
    ("name", "option"), [("serve", "--workers N"), ("worker", "--redis URL"), ("check", "--json")]
)
def test_each_command_has_its_help(tmp_path: Path, name: str, option: str) -> None:
    result = run([sys.executable, "-m", "attention_lab", name, "--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: attention-lab {name}") and option in result.stdout, result.stdout


def _version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def test_check_reports_the_settings_folders_device_and_ways_of_serving(tmp_path: Path) -> None:
    token = "s3cret-admin-token-0123456789"
    env = lab_env(tmp_path, ATTENTION_LAB_ADMIN_TOKEN=token, ATTENTION_LAB_RUN_NICE="3")
    result = run([*console_command(), "check", "--json"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert token not in result.stdout, "the admin token must never be printed"
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["errors"] == []

    settings = report["settings"]
    runs = tmp_path.resolve() / "runs"
    assert settings["ATTENTION_LAB_RUNS_DIR"] == {"value": str(runs), "set": str(tmp_path / "runs")}
    assert settings["ATTENTION_LAB_DEVICE"]["value"] == "cpu"
    assert settings["ATTENTION_LAB_RUN_NICE"] == {"value": 3, "set": "3"}
    assert settings["ATTENTION_LAB_RUN_MAX_SECONDS"] == {"value": 3600, "set": None}  # the default
    assert settings["ATTENTION_LAB_ADMIN_TOKEN"]["value"] == f"set ({len(token)} characters)"
    assert {"ATTENTION_LAB_TORCH_THREADS", "ATTENTION_LAB_REDIS_URL", "ATTENTION_LAB_ADMINS"} <= set(settings)

    folders = report["folders"]
    assert folders["runs"] == {"path": str(runs), "exists": False, "writable": True}
    assert folders["app"] == str(HOME.parent)
    assert folders["checkpoints"] == {"path": str(CHECKPOINTS_DIR), "count": len(list_checkpoints())}
    assert folders["checkpoints"]["count"] > 0
    # The app's own config is in force even from a folder outside the checkout.
    assert folders["streamlit_config"][-1] == str(HOME.parent / ".streamlit" / "config.toml")

    device = report["device"]
    assert device["torch"] == torch.__version__ and device["cuda"] == torch.cuda.is_available()
    assert device["resolved"] == "cpu" and device["problem"] is None

    serving = report["serving"]
    assert set(serving) == WAYS
    assert (
        serving["one_box"]["present"] == {"streamlit": _version("streamlit")} and serving["one_box"]["ready"]
    )
    assert serving["class"]["present"]["nginx"] == shutil.which("nginx")
    assert serving["several_boxes"]["present"] == {
        "redis-server": shutil.which("redis-server"),
        "rq": _version("rq"),
        "redis": _version("redis"),
    }
    assert serving["sign_in"]["present"] == {"Authlib": _version("Authlib")}
    assert serving["gpu"]["ready"] == torch.cuda.is_available()
    # streamlit[performance] brings uvloop, and Streamlit's server runs on it
    assert report["event_loop"] == {"name": "uvloop", "version": _version("uvloop"), "fix": None}


def test_check_names_a_wrong_setting_and_exits_2(tmp_path: Path) -> None:
    env = lab_env(tmp_path, ATTENTION_LAB_TORCH_THREADS="two")
    message = "ATTENTION_LAB_TORCH_THREADS: 'two' is not a whole number"
    text = run([*console_command(), "check"], tmp_path, env)
    assert text.returncode == 2 and message in text.stderr, text.stderr
    assert message in text.stdout and "ways of serving:" in text.stdout  # the rest is still reported
    as_json = run([sys.executable, "-m", "attention_lab", "check", "--json"], tmp_path, env)
    assert as_json.returncode == 2
    report = json.loads(as_json.stdout)
    assert report["ok"] is False and report["errors"] == [message]
    assert report["settings"]["ATTENTION_LAB_TORCH_THREADS"]["error"] == message


def _wait_healthy(proc: subprocess.Popen[str], url: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"the app exited with {proc.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer within {timeout} s"
        time.sleep(0.5)


def test_the_bare_command_starts_the_app_with_its_config_from_any_folder(tmp_path: Path) -> None:
    port = free_port()
    flags = ["--server.port", str(port), "--server.headless", "true", "--server.address", "127.0.0.1"]
    log = tmp_path / "app.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [*console_command(), *flags, "--browser.gatherUsageStats", "false"],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env=lab_env(tmp_path),
            start_new_session=True,  # its own group: stopped below, with anything it started
        )
    try:
        _wait_healthy(proc, f"http://127.0.0.1:{port}{HEALTH}")
        # The command became Streamlit's (exec, through the app process that announces its backend):
        # signals reach it, on the package's Home.py.
        assert f"-m {APP_PROCESS} run {HOME} --server.port {port} " in command_line(proc.pid)
        # Its server runs on uvloop (streamlit[performance]): the loop's extension is loaded.
        assert "/uvloop/loop." in Path(f"/proc/{proc.pid}/maps").read_text()
        # Static serving is on only in app/.streamlit/config.toml: the script's config is in force.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/app/static/charts.js", timeout=30) as response:
            assert response.status == 200
            assert response.read() == (HOME.parent / "static" / "charts.js").read_bytes()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, log.read_text()[-2000:]


def test_serve_runs_two_app_processes_behind_nginx(tmp_path: Path) -> None:
    """`attention-lab serve --workers 2` from a folder outside the checkout; SIGTERM stops it all."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with serving(tmp_path / "serve", 2, command=[*console_command(), "serve"], cwd=elsewhere) as served:
        status, headers, cookies = get(served.url + "/gpt?text=hello")
        assert status == 200 and headers["X-Upstream"].startswith("127.0.0.1:")
        assert any(c.startswith(f"{ROUTE}=") for c in cookies), cookies
        status, headers, _ = get(served.url + "/app/static/charts.js")
        assert status == 200 and "X-Upstream" not in headers  # nginx sends it from its copy
        tree = process_tree(served.proc.pid) - {served.proc.pid}
        apps = [pid for pid in tree if f"-m {APP_PROCESS} run {HOME} " in command_line(pid)]
        assert len(apps) == 2, {pid: command_line(pid) for pid in tree}
    assert served.proc.returncode == 0, "".join(served.output)
    left = {pid: command_line(pid) for pid in tree if command_line(pid)}
    assert not left, f"still running after SIGTERM: {left}"
