"""Optional test dependencies, pip-installed on first use so the tests that need them always run."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]


def installed(module: str, requirements: str, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The module, pip-installed from REPO/requirements if missing (pinned to the torch already
    installed, so pip never swaps torch)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pass
    constraints = tmp_path_factory.mktemp("pip") / "torch-constraint.txt"
    constraints.write_text(f"torch=={torch.__version__.split('+')[0]}\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "-r", str(REPO / requirements)]
        + ["-c", str(constraints)],
        check=True,
    )
    importlib.invalidate_caches()
    return importlib.import_module(module)
