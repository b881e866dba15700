"""The library's command line run as a user runs it: a subprocess from the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """`python -m transformer_core ARGS` with its output captured; check: fail on a non-zero exit,
    showing stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "transformer_core", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if check and result.returncode != 0:
        raise AssertionError(f"exit {result.returncode}: {result.stderr}")
    return result
