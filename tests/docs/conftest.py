"""The documentation site, built once per test session in strict mode into a temporary folder."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.docs.docs_support import ROOT, Built


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Built:
    pytest.importorskip("material", reason="the docs extra (mkdocs-material) is not installed")
    folder = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "OMP_NUM_THREADS": "1", "ATTENTION_LAB_DEVICE": "cpu"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(folder)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return Built(folder, done.returncode, done.stdout + done.stderr)
