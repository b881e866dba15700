"""`attention-lab serve`: a class on one box, N app processes behind Debian's nginx, in the
foreground (deploy/README.md).

Starts N `streamlit run <package>/Home.py` processes on free loopback ports and nginx
(unprivileged, from nginx.conf.template beside this file) on ADDRESS:PORT in front of them:
a route cookie keeps each browser on one process, websockets are upgraded, every process is
health-checked before the URL is printed. Ctrl+C, SIGTERM or SIGHUP stops every child; an
app process that dies is restarted (up to 5 times). Home.py and the static files come from
the installed package, the processes run on this interpreter (sys.executable): the same from
a checkout or a wheel, from any working directory.

This process stays small (the standard library only): torch and Streamlit's config are
loaded in the short preflight process and in the app processes.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from attention_lab import APP_PROCESS
from attention_lab.deploy import serve_support as support

MAX_RESTARTS = 5
Process = subprocess.Popen[bytes]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
ENVIRONMENT = """\
Environment: NGINX (nginx binary), ATTENTION_LAB_TORCH_THREADS (torch and BLAS threads per process,
default 1), and any ATTENTION_LAB_* / STREAMLIT_* setting, passed on to every app process.
The app processes run on this Python ({python})."""


class Refused(Exception):
    """A problem found before anything started: one line, exit status 2."""


class Failed(Exception):
    """A problem after processes started: everything is stopped, exit status 1."""


class Stopping(Exception):
    """A stop signal arrived: everything is stopped, exit status 0."""


@dataclass(frozen=True)
class Options:
    workers: int
    port: int
    address: str
    run_dir: Path | None
    timeout: int
    metrics_port: int | None


def cores() -> int:
    """The cores this process may run on (what `nproc` says)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The options as text: parse_options checks them, with the messages deploy/serve.sh always gave."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Attention Lab for a class on one box: N app processes behind nginx, in the "
        "foreground. Ctrl+C or SIGTERM stops every process.",
        epilog=ENVIRONMENT.format(python=sys.executable),
        allow_abbrev=False,
    )
    add = parser.add_argument
    add("--workers", metavar="N", default=str(cores()), help=f"app processes (default: the cores, {cores()})")
    add("--port", metavar="P", default="8501", help="port nginx listens on (default 8501)")
    add(
        "--address",
        metavar="A",
        default="127.0.0.1",
        help="nginx's address (default 127.0.0.1; 0.0.0.0: the network)",
    )
    add(
        "--run-dir",
        metavar="DIR",
        help="nginx's config, pid, temp files and all logs, kept on exit "
        "(default: a fresh temporary folder, removed on exit)",
    )
    add(
        "--timeout",
        metavar="S",
        default="180",
        help="seconds to wait for the processes to be healthy (default 180)",
    )
    add(
        "--metrics-port",
        metavar="M",
        help="serve the admin's figures as Prometheus metrics on 127.0.0.1:M/metrics (default: off)",
    )
    return parser


def _whole(text: str, low: int, high: int | None = None) -> int | None:
    """`text` as a whole number within [low, high], else None."""
    if not (text.isascii() and text.isdigit()) or int(text) < low or (high is not None and int(text) > high):
        return None
    return int(text)


def parse_options(argv: list[str], prog: str) -> Options:
    """The options, or argparse's usage and one line naming the wrong one (exit 2)."""
    parser = build_parser(prog)
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"unknown argument '{unknown[0]}' (see --help)")
    workers, port, timeout = _whole(args.workers, 1), _whole(args.port, 1, 65535), _whole(args.timeout, 1)
    metrics = None if args.metrics_port is None else _whole(args.metrics_port, 1, 65535)
    if workers is None:
        parser.error(f"--workers must be a positive whole number, got '{args.workers}'")
    if port is None:
        parser.error(f"--port must be 1-65535, got '{args.port}'")
    if timeout is None:
        parser.error(f"--timeout must be a positive number of seconds, got '{args.timeout}'")
    if not args.address:
        parser.error("--address must not be empty")
    if args.metrics_port is not None and (metrics is None or metrics == port):
        parser.error(f"--metrics-port must be 1-65535 and not --port, got '{args.metrics_port}'")
    run_dir = Path(args.run_dir).resolve() if args.run_dir else None
    return Options(workers, port, args.address, run_dir, timeout, metrics)


def find_nginx(prog: str) -> str:
    """The nginx binary: $NGINX, else nginx on PATH; a missing one is named with its fix."""
    given = os.environ.get("NGINX")
    if given:
        if not (os.path.isfile(given) and os.access(given, os.X_OK)):
            raise Refused(f"NGINX={given} is not an executable file. Unset NGINX to use nginx from PATH.")
        return given
    found = shutil.which("nginx")
    if found:
        return found
    if os.access("/usr/sbin/nginx", os.X_OK):
        raise Refused(
            "nginx is installed as /usr/sbin/nginx, but /usr/sbin is not on your PATH.\n"
            f'  Run:  PATH="$PATH:/usr/sbin" {prog} ...   (or set NGINX=/usr/sbin/nginx)'
        )
    raise Refused(
        "nginx is not installed (no nginx on PATH).\n"
        "  Install Debian's package:  sudo apt-get install -y nginx\n"
        f"  ({prog} runs it unprivileged from its own config; the system service is not needed:\n"
        "  sudo systemctl disable --now nginx). Or serve one process without nginx:  attention-lab"
    )


def preflight(app: Path, options: Options) -> int:
    """Settings, Streamlit and the port, checked before anything starts: Streamlit's upload
    limit in MB. The settings are parsed in a process of their own (they import torch)."""
    result = subprocess.run(
        [sys.executable, "-m", "attention_lab.deploy.serve_support", "preflight", "--app", str(app)],
        stdout=subprocess.PIPE,
        text=True,
    )
    if result.returncode != 0:
        raise SystemExit(2)  # the preflight process named the problem on stderr
    problem = support.port_problem(options.address, options.port)
    if problem is not None:
        raise Refused(
            f"cannot listen on {options.address}:{options.port}: {problem}. "
            "Is another server using that port? Pick another with --port."
        )
    return int(result.stdout.split()[-1])


def _signal_group(proc: Process, sig: int) -> bool:
    """Send `sig` to the process group `proc` leads (it and whatever it started)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_alive(proc: Process) -> bool:
    proc.poll()  # reap the leader: a zombie would count as alive
    return _signal_group(proc, 0)


def _ended(code: int) -> str:
    return f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"


def _tail(log: Path, lines: int = 25) -> None:
    try:
        text = log.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return
    if text:
        print("\n".join("    " + line for line in text), file=sys.stderr, flush=True)


class Server:
    """nginx and the app processes of one `attention-lab serve`, started, watched and stopped."""

    def __init__(self, app: Path, options: Options, nginx: str, max_upload_mb: int, prog: str) -> None:
        self.app, self.options, self.prog = app, options, prog
        self.nginx_bin, self.max_upload_mb = nginx, max_upload_mb
        self.ports = support.free_loopback_ports(options.workers)
        self.cookie_secret = os.environ.get("STREAMLIT_SERVER_COOKIE_SECRET") or secrets.token_hex(32)
        self.keep_run_dir = options.run_dir is not None
        self.run_dir = options.run_dir or Path(tempfile.mkdtemp(prefix="attention-lab-serve."))
        (self.run_dir / "logs").mkdir(parents=True, exist_ok=True)
        (self.run_dir / "tmp").mkdir(exist_ok=True)
        self.apps: list[Process | None] = [None] * options.workers
        self.restarts = [0] * options.workers
        self.nginx: Process | None = None
        self.metrics: Process | None = None
        self.static_dir: Path | None = None
        self.stopping: str | None = None

    def say(self, message: str) -> None:
        print(f"{self.prog}: {message}", file=sys.stderr, flush=True)

    def run(self) -> int:
        """Start, then watch until a signal (exit 0) or a failure (exit 1); always stop everything."""
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_signal)
        status = 0
        try:
            self._start()
            self._supervise()
        except Stopping:
            self.say(f"{self.stopping} received, stopping nginx and {len(self.apps)} app processes")
        except Failed as exc:
            self.say(f"error: {exc}")
            status = 1
        finally:
            self.stop_all()
        return status

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = self.stopping or signal.Signals(signum).name

    def _tick(self, seconds: float) -> None:
        """Sleep a moment; a stop signal that arrived ends what is under way."""
        time.sleep(seconds)
        if self.stopping:
            raise Stopping

    def _spawn(self, argv: list[str], log: Path, env: dict[str, str] | None = None) -> Process:
        # A session of its own: stopping its group also stops what it started, and Ctrl+C in
        # the terminal reaches only this process, which then stops everything in order.
        with open(log, "ab") as out:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    def _start_app(self, i: int) -> None:
        env = {
            **os.environ,
            "ATTENTION_LAB_TORCH_THREADS": os.environ.get("ATTENTION_LAB_TORCH_THREADS") or "1",
            "STREAMLIT_SERVER_COOKIE_SECRET": self.cookie_secret,
        }
        argv = [sys.executable, "-m", APP_PROCESS, "run", str(self.app / "Home.py")]
        argv += ["--server.port", str(self.ports[i]), "--server.address", "127.0.0.1"]
        argv += ["--server.headless", "true", "--server.fileWatcherType", "none"]
        argv += ["--server.runOnSave", "false", "--browser.gatherUsageStats", "false"]
        self.apps[i] = self._spawn(argv, self.run_dir / "logs" / f"app-{i + 1}.log", env)

    def _wait_healthy(self, watched: list[Process], urls: list[str]) -> str | None:
        """None once every URL answers 200, else why not (a watched process died, the timeout)."""
        deadline = time.monotonic() + self.options.timeout
        pending = list(urls)
        while True:
            for proc in watched:
                if proc.poll() is not None:
                    return f"process {proc.pid} {_ended(proc.returncode)} while starting"
            pending = [url for url in pending if not support.healthy(url)]
            if not pending:
                return None
            if time.monotonic() > deadline:
                return f"no healthy answer within {self.options.timeout} s from: " + ", ".join(pending)
            self._tick(0.25)

    def _start(self) -> None:
        n, logs, ports = len(self.ports), self.run_dir / "logs", " ".join(map(str, self.ports))
        self.say(f"starting {n} app processes on 127.0.0.1 ports {ports} (logs: {logs})")
        for i in range(n):
            self._start_app(i)
        urls = [support.health_url("127.0.0.1", port) for port in self.ports]
        problem = self._wait_healthy([p for p in self.apps if p], urls)
        if problem:
            self.say(problem)
            for i, port in enumerate(self.ports):
                self.say(f"app process {i + 1} (127.0.0.1:{port}), last lines of its log:")
                _tail(logs / f"app-{i + 1}.log")
            raise Failed("the app processes did not become healthy")
        self._start_nginx()
        if self.options.metrics_port is not None:
            self._start_metrics(self.options.metrics_port)
        pids = " ".join(str(p.pid) for p in self.apps if p)
        self.say(f"nginx pid {self.nginx.pid if self.nginx else '-'}, app pids {pids}")
        print(
            f"Attention Lab is ready: http://{self._shown_host()}:{self.options.port}/  "
            f"({n} app processes behind nginx; Ctrl+C stops all)",
            flush=True,
        )

    def _start_nginx(self) -> None:
        """nginx from a generated config, checked with `nginx -t` first, serving the static files itself."""
        logs, as_root = self.run_dir / "logs", os.geteuid() == 0
        try:
            self.static_dir = support.copy_static(self.app)
            if as_root:
                support.hand_to_nobody(self.run_dir)
        except OSError as exc:
            raise Failed(f"cannot prepare the static files or {self.run_dir} for nginx: {exc}") from None
        conf = support.nginx_config(
            run_dir=self.run_dir,
            static_dir=self.static_dir,
            address=self.options.address,
            port=self.options.port,
            app_ports=self.ports,
            max_upload_mb=self.max_upload_mb,
            as_root=as_root,
        )
        (self.run_dir / "nginx.conf").write_text(conf)
        argv = [self.nginx_bin, "-p", f"{self.run_dir}/", "-c", str(self.run_dir / "nginx.conf")]
        argv += ["-e", str(logs / "error.log")]
        with open(logs / "nginx-test.log", "wb") as out:
            tested = subprocess.run([*argv, "-t"], stdout=out, stderr=subprocess.STDOUT)
        if tested.returncode != 0:
            _tail(logs / "nginx-test.log")
            raise Failed(f"nginx rejected the generated config {self.run_dir / 'nginx.conf'} (see above)")
        self.nginx = self._spawn([*argv, "-g", "daemon off;"], logs / "nginx.log")
        if self._wait_healthy([self.nginx], [support.health_url(self.options.address, self.options.port)]):
            _tail(logs / "error.log")
            _tail(logs / "nginx.log")
            raise Failed(f"nginx did not start on {self.options.address}:{self.options.port} (see above)")

    def _start_metrics(self, port: int) -> None:
        """The admin's figures as Prometheus metrics (serving/metrics.py), on loopback only."""
        log = self.run_dir / "logs" / "metrics.log"
        argv = [sys.executable, "-m", "attention_lab.serving.metrics", "--port", str(port)]
        self.metrics = self._spawn(argv, log)
        if self._wait_healthy([self.metrics], [f"http://127.0.0.1:{port}/metrics"]):
            _tail(log)
            raise Failed(f"the metrics exporter did not start on 127.0.0.1:{port} (see above)")
        self.say(f"Prometheus metrics on http://127.0.0.1:{port}/metrics (pid {self.metrics.pid})")

    def _shown_host(self) -> str:
        """The host of the printed URL: for 0.0.0.0 the box's first address, as students type it."""
        if self.options.address != "0.0.0.0":
            return support.url_host(self.options.address)
        try:
            found = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5)
            addresses = found.stdout.split()
        except (OSError, subprocess.TimeoutExpired):
            addresses = []
        return addresses[0] if addresses else os.uname().nodename

    def _supervise(self) -> None:
        """Restart an app process that died (up to MAX_RESTARTS times); nginx dying ends the serve."""
        while True:
            self._tick(0.2)
            if self.nginx is not None and self.nginx.poll() is not None:
                _tail(self.run_dir / "logs" / "error.log")
                raise Failed(f"nginx {_ended(self.nginx.returncode)} (see above)")
            for i, proc in enumerate(self.apps):
                if proc is None or proc.poll() is None:
                    continue
                log = self.run_dir / "logs" / f"app-{i + 1}.log"
                if self.restarts[i] >= MAX_RESTARTS:
                    _tail(log)
                    raise Failed(
                        f"app process {i + 1} {_ended(proc.returncode)} for the "
                        f"{MAX_RESTARTS + 1}th time (see above)"
                    )
                self.restarts[i] += 1
                self.say(
                    f"app process {i + 1} (pid {proc.pid}) {_ended(proc.returncode)}; restarting it "
                    f"({self.restarts[i]}/{MAX_RESTARTS}, log: {log})"
                )
                _signal_group(proc, signal.SIGTERM)  # anything it left behind in its group
                self._start_app(i)

    def stop_all(self) -> None:
        """SIGTERM to every child's process group, SIGKILL to those left after 15 s; clean up."""
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        procs = [p for p in (self.nginx, self.metrics, *self.apps) if p is not None]
        signalled = [p for p in procs if _signal_group(p, signal.SIGTERM)]
        deadline = time.monotonic() + 15
        while any(_group_alive(p) for p in signalled) and time.monotonic() < deadline:
            time.sleep(0.1)
        for proc in signalled:
            if _group_alive(proc):
                self.say(f"process group {proc.pid} did not stop within 15 s; killing it")
                _signal_group(proc, signal.SIGKILL)
        for proc in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.say(f"process {proc.pid} is still running")
        if self.static_dir is not None:
            shutil.rmtree(self.static_dir, ignore_errors=True)
        if self.keep_run_dir:
            self.say(f"stopped; logs are in {self.run_dir / 'logs'}")
        else:
            shutil.rmtree(self.run_dir, ignore_errors=True)
            self.say("stopped")


def main(app: Path, argv: list[str], prog: str = "attention-lab serve") -> int:
    """`attention-lab serve`: checks (exit 2 on a problem, nothing started), then serve until stopped."""
    options = parse_options(argv, prog)
    try:
        nginx = find_nginx(prog)
        max_upload_mb = preflight(app, options)
        server = Server(app, options, nginx, max_upload_mb, prog)
    except Refused as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"{prog}: error: cannot create the run folder: {exc}", file=sys.stderr)
        return 2
    return server.run()
