"""`attention-lab check`: what this box would run with, before a class finds out.

Prints every ATTENTION_LAB_* setting as parsed, the folders the lab reads and writes, the
Streamlit config files in force, the device, the server's event loop, and what each way of
serving has or misses (one box, a class on one box, several boxes, a GPU, sign-in). Exit 0
when every setting parses, 2 with each wrong setting's message otherwise; a missing optional
tool is reported, not an error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from attention_lab.serving import settings
from transformer_core.errors import ConfigError

MB = 2**20


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _redis_url() -> str | None:
    """The Redis URL with its password hidden: the report may be pasted into an issue."""
    url = settings.redis_url()
    parts = urlsplit(url or "")
    if url and parts.password:
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))
    return url


def _admin_token() -> str | None:
    token = settings.admin_token()  # the secret itself is never printed
    return None if token is None else f"set ({len(token)} characters)"


#: Each setting and its value as the lab parses it (in the variable's own unit).
SETTINGS: dict[str, Callable[[], Any]] = {
    settings.RUNS_DIR_ENV: lambda: _text(settings.runs_dir()),
    settings.MODELS_DIR_ENV: lambda: _text(settings.models_dir()),
    settings.REDIS_URL_ENV: _redis_url,
    settings.DEVICE_ENV: settings.device_setting,
    "ATTENTION_LAB_TORCH_THREADS": settings.torch_threads,
    "ATTENTION_LAB_PAGE_RUNS": settings.page_runs,
    "ATTENTION_LAB_MAX_RUNS": settings.max_runs,
    "ATTENTION_LAB_RUNS_MAX_MB": lambda: settings.runs_max_bytes() / MB,
    "ATTENTION_LAB_RUN_MAX_SECONDS": settings.run_max_seconds,
    "ATTENTION_LAB_RUN_THREADS": settings.run_threads,
    "ATTENTION_LAB_RUN_NICE": settings.run_nice,
    "ATTENTION_LAB_RUN_YIELD": settings.run_yield,
    "ATTENTION_LAB_RUN_GPU_FRACTION": lambda: settings.gpu_fraction(settings.max_runs()),
    "ATTENTION_LAB_CLASS_HOURS": settings.class_hours,
    "ATTENTION_LAB_RUNS_PER_PERSON": settings.runs_per_person,
    "ATTENTION_LAB_UPLOADS_PER_PERSON": settings.uploads_per_person,
    "ATTENTION_LAB_DISK_PER_PERSON_MB": lambda: settings.disk_per_person_bytes() / MB,
    settings.ADMINS_ENV: lambda: sorted(settings.admin_emails()),
    settings.ADMIN_TOKEN_ENV: _admin_token,
}


def parsed_settings() -> tuple[dict[str, dict[str, Any]], list[str]]:
    """name -> {value, set (the raw text, or None when unset)}, and every wrong setting's message."""
    found, errors = {}, []
    for name, parse in SETTINGS.items():
        raw = os.environ.get(name)
        shown = "***" if name == settings.ADMIN_TOKEN_ENV and raw else raw
        try:
            found[name] = {"value": parse(), "set": shown}
        except ConfigError as exc:
            found[name] = {"value": None, "set": shown, "error": str(exc)}
            errors.append(str(exc))
    if not errors:
        try:  # a setting this report does not list yet still stops a server's start: it counts here too
            settings.check_all()
        except ConfigError as exc:
            errors.append(str(exc))
    return found, errors


def writable(folder: Path) -> bool:
    """Whether the lab can write in `folder`, or make it (its nearest existing parent is writable)."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    return existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)


def _folder(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {"path": None, "exists": False, "writable": False}
    return {"path": str(path), "exists": path.is_dir(), "writable": writable(path)}


def folders(app: Path, runs: str | None) -> dict[str, Any]:
    """The runs and data folders, the shipped checkpoints, the Streamlit config files in force."""
    from attention_lab.deploy.serve_support import streamlit_config
    from transformer_core.io import CHECKPOINTS_DIR, list_checkpoints

    config_files = [f for f in streamlit_config(app).get_config_files("config.toml") if os.path.isfile(f)]
    return {
        "app": str(app),
        "runs": _folder(Path(runs) if runs else None),
        "data": _folder(settings.data_dir()),
        "checkout": _text(settings.checkout_root()),
        "checkpoints": {"path": str(CHECKPOINTS_DIR), "count": len(list_checkpoints())},
        # Later files win: the user's, the working directory's, then the app's own (script level).
        "streamlit_config": config_files,
    }


def device(choice: str | None) -> dict[str, Any]:
    """torch, CUDA, and the device ATTENTION_LAB_DEVICE resolves to."""
    import torch

    from transformer_core.device import resolve_device

    cuda = torch.cuda.is_available()
    found: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": cuda,
        "cuda_version": torch.version.cuda,
        "name": torch.cuda.get_device_name(0) if cuda else None,
        "count": torch.cuda.device_count() if cuda else 0,
        "resolved": None,
        "problem": None,
    }
    try:
        found["resolved"] = str(resolve_device(choice or "auto"))
    except ConfigError as exc:
        found["problem"] = f"{settings.DEVICE_ENV}: {exc}"
    return found


def _package(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _way(present: dict[str, str | None], fix: str) -> dict[str, Any]:
    missing = [name for name, found in present.items() if found is None]
    return {"ready": not missing, "present": present, "missing": missing, "fix": fix if missing else None}


def serving(gpu: dict[str, Any]) -> dict[str, Any]:
    """Each way of serving: what it needs, found (a version or a path) or missing, and the fix."""
    streamlit = {"streamlit": _package("streamlit")}
    nginx = os.environ.get("NGINX") or shutil.which("nginx")
    return {
        "one_box": _way(streamlit, "pip install attention-lab"),
        "class": _way({**streamlit, "nginx": nginx}, "sudo apt-get install -y nginx (on PATH, or NGINX=...)"),
        "several_boxes": _way(
            {"redis-server": shutil.which("redis-server"), "rq": _package("rq"), "redis": _package("redis")},
            "pip install 'attention-lab[redis]'; sudo apt-get install -y redis-server (on the Redis host)",
        ),
        "gpu": _way({"cuda": gpu["name"]}, "a CUDA GPU and torch's CUDA build"),
        "sign_in": _way({"Authlib": _package("Authlib")}, "pip install 'attention-lab[auth]'"),
    }


def event_loop() -> dict[str, Any]:
    """The loop Streamlit's server will run on: uvloop where it is installed, else asyncio's own."""
    uvloop = None if sys.platform == "win32" else _package("uvloop")
    return {
        "name": "asyncio" if uvloop is None else "uvloop",
        "version": uvloop,
        "fix": None if uvloop else "pip install 'streamlit[performance]' (uvloop: less server CPU a message)",
    }


def report(app: Path) -> dict[str, Any]:
    """Everything `check` prints, as one object (its --json form)."""
    found, errors = parsed_settings()
    gpu = device(found[settings.DEVICE_ENV]["value"])
    return {
        "ok": not errors,
        "errors": errors,
        "version": _package("attention-lab"),
        "python": sys.executable,
        "settings": found,
        "other_settings": {
            k: v for k, v in os.environ.items() if k.startswith("ATTENTION_LAB_") and k not in found
        },
        "folders": folders(app, found[settings.RUNS_DIR_ENV]["value"]),
        "device": gpu,
        "serving": serving(gpu),
        "event_loop": event_loop(),
    }


WAYS = {
    "one_box": "one box",
    "class": "a class on one box",
    "several_boxes": "several boxes",
    "gpu": "GPU",
    "sign_in": "sign-in",
}


def _shown(value: Any) -> str:
    if value is None or value == []:
        return "-"
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def as_text(r: dict[str, Any]) -> str:
    """The report for a person: one line a setting, folder and way of serving."""
    lines = [
        f"Attention Lab {r['version']} on {r['python']}",
        "settings (ATTENTION_LAB_*; set: from the environment):",
    ]
    for name, s in r["settings"].items():
        shown = f"ERROR {s['error']}" if "error" in s else _shown(s["value"])
        lines.append(
            f"  {name.removeprefix('ATTENTION_LAB_'):<22} {shown}{'' if s['set'] is None else '  (set)'}"
        )
    lines += [f"  {name}={raw}  (not checked here)" for name, raw in r["other_settings"].items()]
    f, d = r["folders"], r["device"]
    for key in ("runs", "data"):
        state = "writable" if f[key]["writable"] else "NOT writable"
        lines.append(
            f"{key} folder: {f[key]['path']} ({state}{'' if f[key]['exists'] else ', not made yet'})"
        )
    lines.append(f"checkpoints: {f['checkpoints']['path']} ({f['checkpoints']['count']} shipped)")
    lines.append("streamlit config: " + (", ".join(f["streamlit_config"]) or "none (Streamlit's defaults)"))
    gpu = f"CUDA {d['cuda_version']}, {d['name']}" if d["cuda"] else "no CUDA GPU"
    lines.append(f"device: torch {d['torch']}, {gpu}; the app serves on {d['resolved'] or d['problem']}")
    loop = r["event_loop"]
    lines.append(
        f"event loop: {loop['name']} {loop['version'] or ''}".rstrip()
        + (f" ({loop['fix']})" if loop["fix"] else "")
    )
    lines.append("ways of serving:")
    for key, label in WAYS.items():
        way = r["serving"][key]
        present = ", ".join(f"{name} {found}" for name, found in way["present"].items() if found)
        if way["ready"]:
            lines.append(f"  {label:<20} ready    {present}")
        else:
            has = f"; has {present}" if present else ""
            lines.append(f"  {label:<20} missing  {', '.join(way['missing'])} ({way['fix']}){has}")
    return "\n".join(lines)


def main(app: Path, argv: list[str], prog: str = "attention-lab check") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[1].replace("\n", " "))
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    args = parser.parse_args(argv)
    found = report(app)
    print(json.dumps(found, indent=2) if args.json else as_text(found))
    for error in found["errors"]:
        print(f"{prog}: error: {error}", file=sys.stderr)
    return 0 if found["ok"] else 2
