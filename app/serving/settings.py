"""Every ATTENTION_LAB_* setting of the serving layer and the app, parsed in one place.

Why one place: each setting used to be read where it was needed, some with a bare int()
(`ATTENTION_LAB_TORCH_THREADS=two` was a traceback). Here each one has its default, its
bounds and a clear ConfigError naming the variable, the value and what is expected.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import platformdirs

from transformer_core.device import DEVICE_CHOICES
from transformer_core.errors import ConfigError
from transformer_core.io import CHECKPOINTS_DIR

RUNS_DIR_ENV = "ATTENTION_LAB_RUNS_DIR"
REDIS_URL_ENV = "ATTENTION_LAB_REDIS_URL"
DEVICE_ENV = "ATTENTION_LAB_DEVICE"


def env_int(name: str, default: int, low: int = 1) -> int:
    """An integer setting from the environment; a bad value is a clear ConfigError."""
    raw = os.environ.get(name, "").strip()
    try:
        value = int(raw) if raw else default
    except ValueError:
        raise ConfigError(f"{name}: {raw!r} is not a whole number") from None
    if value < low:
        raise ConfigError(f"{name}: must be >= {low}, got {value}")
    return value


def env_float(name: str, default: float, valid: Callable[[float], bool], expected: str) -> float:
    """A finite number setting from the environment that passes `valid` (else a clear
    ConfigError naming what was `expected`)."""
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise ConfigError(f"{name}: {raw!r} is not a number") from None
    if not (math.isfinite(value) and valid(value)):
        raise ConfigError(f"{name}: {expected}, got {value:g}")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """A setting that must be one of `choices`."""
    value = os.environ.get(name, "").strip() or default
    if value not in choices:
        raise ConfigError(f"{name}: {value!r} is not one of {', '.join(choices)}")
    return value


APP_NAME = "attention-lab"


def checkout_root() -> Path | None:
    """The repository the lab runs from (app/ is the attention_lab package beside
    pyproject.toml), or None when it is installed from a wheel."""
    package = Path(__file__).resolve().parents[1]
    root = package.parent
    return root if package.name == "app" and (root / "pyproject.toml").is_file() else None


def data_dir() -> Path:
    """Where the lab writes: the checkout itself, else the per-user data folder
    (platformdirs: ~/.local/share/attention-lab on Linux)."""
    root = checkout_root()
    return root if root is not None else platformdirs.user_data_path(APP_NAME)


def runs_dir() -> Path:
    """Where trained runs (and the box's queue) live: ATTENTION_LAB_RUNS_DIR, else runs/ in
    the data folder (`data_dir`). It may not lie inside the shipped checkpoints folder
    (shipped checkpoints are never written)."""
    folder = Path(os.environ.get(RUNS_DIR_ENV) or data_dir() / "runs").resolve()
    if folder == CHECKPOINTS_DIR or CHECKPOINTS_DIR in folder.parents:
        raise ConfigError(f"{RUNS_DIR_ENV}: {folder} is inside the shipped checkpoints folder")
    return folder


MODELS_DIR_ENV = "ATTENTION_LAB_MODELS_DIR"


def models_dir() -> Path | None:
    """ATTENTION_LAB_MODELS_DIR: a folder of imported models (`python -m transformer_core
    import ... --out <dir>/<name>`), offered in every checkpoint list; None when unset."""
    raw = os.environ.get(MODELS_DIR_ENV, "").strip()
    if not raw:
        return None
    folder = Path(raw).expanduser().resolve()
    if not folder.is_dir():
        raise ConfigError(f"{MODELS_DIR_ENV}: {raw!r} is not a folder")
    return folder


def redis_url() -> str | None:
    """ATTENTION_LAB_REDIS_URL (redis://[:password@]host:port/db), or None for the on-disk queue."""
    return os.environ.get(REDIS_URL_ENV, "").strip() or None


def device_setting() -> str:
    """ATTENTION_LAB_DEVICE: auto (CUDA when available, else CPU), cpu or cuda."""
    return env_choice(DEVICE_ENV, "auto", DEVICE_CHOICES)


def torch_threads() -> int:
    """ATTENTION_LAB_TORCH_THREADS: threads of one torch or numpy (BLAS) operation in an app
    process, default half the cores."""
    return env_int("ATTENTION_LAB_TORCH_THREADS", max(1, (os.cpu_count() or 2) // 2))


def page_runs() -> int:
    """ATTENTION_LAB_PAGE_RUNS, default 1: whole page runs of one app process at once (the
    others wait their turn, in order; attention_lab.frame.turns); 0: no turns."""
    return env_int("ATTENTION_LAB_PAGE_RUNS", 1, low=0)


def max_runs() -> int:
    """ATTENTION_LAB_MAX_RUNS: trainings at once on the box, else 4 on a CUDA box and 2 on CPU."""
    import torch  # only to ask whether a GPU exists; cheap once torch is loaded

    return env_int("ATTENTION_LAB_MAX_RUNS", 4 if torch.cuda.is_available() else 2)


def runs_max_bytes() -> int:
    """ATTENTION_LAB_RUNS_MAX_MB (may be fractional), default 1024 MB, in bytes."""
    return int(env_float("ATTENTION_LAB_RUNS_MAX_MB", 1024.0, lambda v: v > 0, "must be > 0") * 2**20)


def run_max_seconds() -> int:
    """ATTENTION_LAB_RUN_MAX_SECONDS, default 3600: the wall-clock bound of one run."""
    return env_int("ATTENTION_LAB_RUN_MAX_SECONDS", 3600)


def run_threads() -> int:
    """ATTENTION_LAB_RUN_THREADS, default 1: torch and numpy (BLAS) threads of one run process."""
    return env_int("ATTENTION_LAB_RUN_THREADS", 1)


def run_nice() -> int:
    """ATTENTION_LAB_RUN_NICE, default 10: how much lower run processes are scheduled."""
    return env_int("ATTENTION_LAB_RUN_NICE", 10, low=0)


def run_yield() -> float:
    """ATTENTION_LAB_RUN_YIELD, default 0.5: a run pauses between steps while tasks waited
    for a CPU more than this share of the time (priority.CpuPressure); 0 never pauses."""
    return env_float("ATTENTION_LAB_RUN_YIELD", 0.5, lambda v: 0 <= v <= 1, "a share between 0 and 1")


def gpu_fraction(max_running: int) -> float:
    """Each run process's share of the GPU: ATTENTION_LAB_RUN_GPU_FRACTION, else 80% of
    the device split over the run slots (serving keeps the rest)."""
    return env_float(
        "ATTENTION_LAB_RUN_GPU_FRACTION", 0.8 / max_running, lambda v: 0 < v <= 1, "must be in (0, 1]"
    )


def class_hours() -> float:
    """ATTENTION_LAB_CLASS_HOURS, default 3: how long a class session's follow link works."""
    return env_float("ATTENTION_LAB_CLASS_HOURS", 3.0, lambda v: 0 < v <= 24 * 7, "must be in (0, 168] hours")


def runs_per_person() -> int:
    """ATTENTION_LAB_RUNS_PER_PERSON, default 2: one person's runs waiting or training at once."""
    return env_int("ATTENTION_LAB_RUNS_PER_PERSON", 2)


def uploads_per_person() -> int:
    """ATTENTION_LAB_UPLOADS_PER_PERSON, default 5: one person's kept runs on an uploaded corpus."""
    return env_int("ATTENTION_LAB_UPLOADS_PER_PERSON", 5, low=0)


def disk_per_person_bytes() -> int:
    """ATTENTION_LAB_DISK_PER_PERSON_MB (may be fractional), default 256 MB, in bytes: the
    disk one person's runs may use before they may start another."""
    return int(env_float("ATTENTION_LAB_DISK_PER_PERSON_MB", 256.0, lambda v: v > 0, "must be > 0") * 2**20)


ADMINS_ENV, ADMIN_TOKEN_ENV = "ATTENTION_LAB_ADMINS", "ATTENTION_LAB_ADMIN_TOKEN"
MIN_TOKEN_CHARS = 16


def admin_emails() -> frozenset[str]:
    """ATTENTION_LAB_ADMINS: comma-separated e-mail addresses (compared case-insensitively)
    of the people signed in (st.login) who may open /admin; empty: nobody by sign-in."""
    raw = os.environ.get(ADMINS_ENV, "")
    emails = [e.strip().lower() for e in raw.split(",") if e.strip()]
    for email in emails:
        name, at, domain = email.partition("@")
        if not (name and at and domain) or "@" in domain or any(c.isspace() for c in email):
            raise ConfigError(
                f"{ADMINS_ENV}: {email!r} is not an e-mail address (name@domain, comma-separated)"
            )
    return frozenset(emails)


def admin_token() -> str | None:
    """ATTENTION_LAB_ADMIN_TOKEN: the secret /admin asks for on a box without sign-in (at
    least 16 characters, e.g. `python -c "import secrets; print(secrets.token_urlsafe())"`)."""
    token = os.environ.get(ADMIN_TOKEN_ENV, "").strip()
    if token and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"{ADMIN_TOKEN_ENV}: must be at least {MIN_TOKEN_CHARS} characters, got {len(token)}"
        )
    return token or None


def check_all() -> None:
    """Parse every setting once (a server's start): a bad value stops it with its message."""
    runs_dir(), models_dir(), device_setting(), torch_threads(), page_runs(), runs_max_bytes()
    run_max_seconds(), run_threads(), run_nice(), run_yield(), gpu_fraction(max_runs()), class_hours()
    admin_emails(), admin_token(), runs_per_person(), uploads_per_person(), disk_per_person_bytes()
