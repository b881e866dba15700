"""Starting a lab to test or measure, and reading its processes: free loopback ports, the app
(`streamlit run app/Home.py`) started one way, its health check, and the memory and CPU of
a server's process tree from /proc.

Why one way: a browser test and a benchmark that start the app differently measure
different apps.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from attention_lab import APP_PROCESS
from attention_lab.frame.streamlit_private import HEALTH

ROOT = Path(__file__).resolve().parents[2]  # the checkout: app/ is the attention_lab package


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(script: str | Path, port: int, args: Sequence[str] = ()) -> list[str]:
    """`streamlit run script` headless on 127.0.0.1:port, no file watcher or usage statistics, as the
    `attention-lab` command runs it (APP_PROCESS)."""
    return [
        sys.executable, "-m", APP_PROCESS, "run", str(script), "--server.headless", "true",
        "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none", *args,
    ]  # fmt: skip


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 240) -> None:
    """Return once `url` answers its health check; raise with the log's tail if `proc` exits
    or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + HEALTH, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"server not healthy within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


@contextmanager
def launched(
    command: Sequence[str], log: Path, env: Mapping[str, str], cwd: Path = ROOT, stop_timeout: float = 30
) -> Iterator[subprocess.Popen[bytes]]:
    """`command` running with its output in `log`; SIGTERM when the block ends (SIGKILL after
    `stop_timeout` seconds), so exactly that process is stopped."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(list(command), cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=dict(env))
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=stop_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def running_app(
    folder: Path,
    env: dict[str, str] | None = None,
    *,
    root: Path = ROOT,
    script: str | Path = "app/Home.py",
    python_path: str = "",
    args: tuple[str, ...] = (),
) -> Iterator[str]:
    """Start `script` of the checkout at `root` (its packages first on the path, then
    `python_path`) on CPU, its runs and log under `folder`, `env` on top (e.g. STREAMLIT_THEME_*
    settings) and `args` (Streamlit options, e.g. --secrets.files) on top; yield its URL once
    healthy; stop exactly that process."""
    port = free_port()
    runs = folder / "runs"  # trained runs, not <repo>/runs
    runs.mkdir(exist_ok=True)
    full_env = {**os.environ, "ATTENTION_LAB_DEVICE": "cpu", "ATTENTION_LAB_RUNS_DIR": str(runs)}
    full_env.update({"PYTHONPATH": os.pathsep.join(filter(None, [str(root), python_path])), **(env or {})})
    log = folder / "streamlit.log"
    url = f"http://127.0.0.1:{port}"
    with launched(streamlit_command(script, port, args), log, full_env, cwd=root, stop_timeout=10) as proc:
        wait_healthy(url, proc, log, timeout=60)
        yield url


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
    """A process's resident memory in KiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


@dataclass
class Server:
    """A lab being measured: its name, URL, app processes and, where started here, its process."""

    name: str
    base: str
    workers: int
    proc: subprocess.Popen[bytes] | None = None
    run_ids: list[str] = field(default_factory=list)  # trainings started against it, to stop at the end
    runs: Path | None = None  # the server's ATTENTION_LAB_RUNS_DIR

    def app_pids(self) -> list[int]:
        """The server's process tree without the training workers, which the app processes
        spawn (so they are their children) but which are not the server's."""
        if self.proc is None:
            return []
        return [p for p in descendants(self.proc.pid) if not is_training_worker(p)]

    def rss_mb(self) -> float:
        """The app processes' resident memory (NaN for a server not started here)."""
        if self.proc is None:
            return float("nan")
        return sum(map(rss_kb, self.app_pids())) / 1024

    def cpu_seconds(self) -> float:
        """CPU seconds the app processes (and nginx) have used so far (NaN where not started here)."""
        if self.proc is None:
            return float("nan")
        return sum(map(cpu_seconds, self.app_pids()))


@contextmanager
def running_jupyterlab(folder: Path) -> Iterator[str]:
    """JupyterLab serving `folder` on a free loopback port (its settings, runtime files and
    kernels' files under folder/.jupyter); yield the URL with its token; stop the server and
    any kernel it started."""
    port, token = free_port(), os.urandom(12).hex()
    home = folder / ".jupyter"
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home), "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    env["JUPYTERLAB_SETTINGS_DIR"] = str(home / "lab-settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(home / "workspaces")
    settings = home / "lab-settings" / "@jupyterlab"
    for plugin, values in {  # no news toast, no "Select Kernel" dialog over the notebook
        "apputils-extension/notification": '{"fetchNews": "false", "checkForUpdates": false}',
        "notebook-extension/tracker": '{"autoStartDefaultKernel": true}',
    }.items():
        (settings / plugin).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{plugin}.jupyterlab-settings").write_text(values + "\n")
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip", "127.0.0.1",
        "--port", str(port), f"--ServerApp.token={token}", f"--ServerApp.root_dir={folder}",
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    log = folder / "jupyterlab.log"
    with launched(command, log, env, cwd=folder, stop_timeout=20) as proc:
        started = []
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    raise RuntimeError(f"jupyterlab exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
                try:
                    with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:
                    time.sleep(0.5)
            else:
                raise RuntimeError(f"jupyterlab did not answer within 120 s:\n{log.read_text()[-3000:]}")
            yield f"{url}/lab/tree/{{path}}?token={token}"
        finally:
            started = descendants(proc.pid)[1:]  # its kernels: stopped with it, or killed after it
    for pid in started:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
