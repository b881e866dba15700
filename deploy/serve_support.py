"""Helpers for deploy/serve.sh: checks before starting, free ports, waiting for health.

Run by serve.sh, not imported by the app:
    python deploy/serve_support.py preflight --address 127.0.0.1 --port 8080 --workers 2
        prints shell assignments (APP_PORTS, MAX_UPLOAD_MB, COOKIE_SECRET) or, on a
        problem, one clear line on stderr and exits with status 2.
    python deploy/serve_support.py wait --timeout 180 --pid 123 --url URL [--url URL ...]
        waits until every URL answers HTTP 200 (exit 0); exits 1 with a message when a
        watched process dies or the timeout passes.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shlex
import socket
import sys
import time
import urllib.error
import urllib.request


def _fail(message: str) -> int:
    print(f"serve.sh: error: {message}", file=sys.stderr)
    return 2


def _port_is_free(address: str, port: int) -> str | None:
    """None when address:port can be bound, else the reason."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _free_loopback_ports(count: int) -> list[int]:
    """Distinct free ports on 127.0.0.1 (all bound at once, then released)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def preflight(args: argparse.Namespace) -> int:
    try:
        from streamlit import config
    except ImportError as exc:
        return _fail(
            f"{sys.executable} cannot import streamlit ({exc}). "
            "Install the app first: pip install -r requirements.txt"
        )
    try:  # a bad ATTENTION_LAB_* setting stops the start with its name, not every page later
        from attention_lab.serving import settings
        from transformer_core.errors import ConfigError
    except ImportError as exc:
        return _fail(
            f"{sys.executable} cannot import the app ({exc}). Install it: pip install -r requirements.txt"
        )
    try:
        settings.check_all()
    except ConfigError as exc:
        return _fail(str(exc))
    reason = _port_is_free(args.address, args.port)
    if reason is not None:
        return _fail(
            f"cannot listen on {args.address}:{args.port}: {reason}. "
            "Is another server using that port? Pick another with --port."
        )
    max_upload_mb = int(config.get_option("server.maxUploadSize"))
    cookie_secret = os.environ.get("STREAMLIT_SERVER_COOKIE_SECRET") or secrets.token_hex(32)
    ports = " ".join(str(p) for p in _free_loopback_ports(args.workers))
    print(f"APP_PORTS={shlex.quote(ports)}")
    print(f"MAX_UPLOAD_MB={max_upload_mb}")
    print(f"COOKIE_SECRET={shlex.quote(cookie_secret)}")
    return 0


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def wait(args: argparse.Namespace) -> int:
    from attention_lab.serving.priority import pid_alive

    start = time.monotonic()
    pending = list(args.urls)
    while pending:
        for pid in args.pid:
            if not pid_alive(pid):
                print(f"serve.sh: error: process {pid} exited while starting", file=sys.stderr)
                return 1
        pending = [url for url in pending if not _healthy(url)]
        if not pending:
            break
        if time.monotonic() - start > args.timeout:
            print(
                f"serve.sh: error: no healthy answer within {args.timeout:.0f} s from: " + ", ".join(pending),
                file=sys.stderr,
            )
            return 1
        time.sleep(0.25)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="serve_support.py")
    sub = parser.add_subparsers(dest="command", required=True)
    pre = sub.add_parser("preflight")
    pre.add_argument("--address", required=True)
    pre.add_argument("--port", type=int, required=True)
    pre.add_argument("--workers", type=int, required=True)
    w = sub.add_parser("wait")
    w.add_argument("--timeout", type=float, default=180.0)
    w.add_argument("--pid", type=int, action="append", default=[])
    w.add_argument("--url", dest="urls", action="append", required=True)
    args = parser.parse_args(argv)
    return preflight(args) if args.command == "preflight" else wait(args)


if __name__ == "__main__":
    sys.exit(main())
