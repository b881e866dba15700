"""What `attention-lab serve` needs besides its processes: ports, health checks, the checks
before anything starts, nginx's config and the static files nginx sends itself.

Everything here is found through the package folder the caller passes in (`app`, the
installed attention_lab) and this interpreter, never through a checkout. The supervisor
imports only the standard library from here; `preflight` runs in a process of its own:

    python -m attention_lab.deploy.serve_support preflight --app DIR
        every ATTENTION_LAB_* setting parses and Streamlit is importable: prints Streamlit's
        upload limit in MB (as the app's own config sets it), else one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from types import ModuleType

TEMPLATE = Path(__file__).with_name("nginx.conf.template")
# Loopback health checks must never go through a proxy from http_proxy.
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def port_problem(address: str, port: int) -> str | None:
    """None when address:port can be bound, else the reason."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def free_loopback_ports(count: int) -> list[int]:
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


def healthy(url: str) -> bool:
    """Whether `url` answers HTTP 200 within 2 s (short: the supervisor checks for signals between tries)."""
    try:
        with _DIRECT.open(url, timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def health_url(address: str, port: int) -> str:
    """Streamlit's health route on address:port. Imported here, not at the top: the supervisor
    loads Streamlit only once its app processes start."""
    from attention_lab.frame.streamlit_private import HEALTH

    return f"http://{url_host(address)}:{port}{HEALTH}"


def url_host(address: str) -> str:
    """How a URL names `address`: IPv6 in brackets, and the wildcards as their loopback."""
    if address == "0.0.0.0":
        return "127.0.0.1"
    if ":" in address:
        return "[::1]" if address == "::" else f"[{address}]"
    return address


def nginx_config(
    *,
    run_dir: Path,
    static_dir: Path,
    address: str,
    port: int,
    app_ports: list[int],
    max_upload_mb: int,
    as_root: bool,
) -> str:
    """nginx.conf.template filled in: nginx on address:port in front of the app processes."""
    from attention_lab.frame.streamlit_private import STREAM, UPLOAD

    servers = "".join(f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=5s;\n" for p in app_ports)
    values = {
        "@STREAM@": STREAM,  # Streamlit's websocket route
        "@UPLOAD@": UPLOAD,  # its file uploads' route
        "@RUN_DIR@": str(run_dir),
        "@STATIC_DIR@": str(static_dir),
        "@ADDRESS@": f"[{address}]" if ":" in address else address,
        "@PORT@": str(port),
        "@MAX_BODY@": f"{max_upload_mb + 2}m",
        "@UPSTREAM_SERVERS@\n": servers,
    }
    conf = TEMPLATE.read_text()
    for placeholder, value in values.items():
        conf = conf.replace(placeholder, value)
    # As root, nginx's worker drops to nobody, which must be able to write its temp files.
    return ("user nobody nogroup;\n" if as_root else "") + conf


def copy_static(app: Path) -> Path:
    """Streamlit's frontend build and the app's static/ in a fresh world-readable folder:
    as root, nginx's worker runs as nobody, which may read neither the Python install nor a
    run folder inside a private one. The caller removes it."""
    from attention_lab.frame.streamlit_private import frontend_build

    source = frontend_build() / "static"
    if not source.is_dir():
        raise OSError(f"Streamlit's static files are not at {source}")
    folder = Path(tempfile.mkdtemp(prefix="attention-lab-static."))
    try:
        shutil.copytree(source, folder / "static")
        shutil.copytree(app / "static", folder / "app-static")
        for path in [folder, *folder.rglob("*")]:
            mode = path.stat().st_mode
            os.chmod(path, mode | (0o555 if path.is_dir() else 0o444))  # a+rX
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def hand_to_nobody(run_dir: Path) -> None:
    """As root: nginx's worker (nobody) may pass through run_dir and write in run_dir/tmp."""
    os.chmod(run_dir, 0o711)
    for path in [run_dir / "tmp", *(run_dir / "tmp").rglob("*")]:
        shutil.chown(path, "nobody", "nogroup")


def streamlit_config(app: Path) -> ModuleType:
    """Streamlit's config as `streamlit run <app>/Home.py` reads it (its script-level config
    included); ImportError where Streamlit cannot be imported."""
    from attention_lab.frame.streamlit_private import script_config

    return script_config(app / "Home.py")


def preflight(app: Path) -> int:
    """Settings and Streamlit, checked in a process that may import torch and Streamlit."""
    try:
        config = streamlit_config(app)
    except ImportError as exc:
        return _refuse(
            f"{sys.executable} cannot import streamlit ({exc}). Install the app: pip install attention-lab"
        )
    try:
        from attention_lab.serving import settings
        from transformer_core.errors import ConfigError
    except ImportError as exc:
        return _refuse(
            f"{sys.executable} cannot import the app ({exc}). Install it: pip install attention-lab"
        )
    try:
        settings.check_all()  # a bad ATTENTION_LAB_* setting stops the start, named, not every page later
    except ConfigError as exc:
        return _refuse(str(exc))
    print(int(config.get_option("server.maxUploadSize")))
    return 0


def _refuse(message: str) -> int:
    print(f"attention-lab serve: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attention_lab.deploy.serve_support")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("preflight").add_argument("--app", type=Path, required=True, help="the package folder")
    args = parser.parse_args(argv)
    return preflight(args.app)


if __name__ == "__main__":
    sys.exit(main())
