"""Run ids: the serving layer's checkpoint source lets the library (and its command line)
open a run by its id, from the runs folder only, with a clear error for every other id."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attention_lab.serving.backends import run_checkpoint_source
from attention_lab.serving.ids import new_run_id
from attention_lab.serving.settings import runs_dir
from transformer_core.errors import CheckpointError, ConfigError
from transformer_core.io import CHECKPOINTS_DIR, checkpoint_sources, load_checkpoint, save_checkpoint
from transformer_core.io.data import reversal_tokenizer
from transformer_core.models import build_model


@pytest.fixture
def saved(tmp_path: Path, tiny_config) -> tuple[Path, torch.nn.Module]:
    tok = reversal_tokenizer()
    torch.manual_seed(0)
    model = build_model(tiny_config("seq2seq", "rope", vocab_size=len(tok))).eval()
    folder = save_checkpoint(tmp_path / "my-model", model, tok, train_args={"steps": 1}, metrics={})
    return folder, model


def test_the_runs_source_is_installed_for_the_library() -> None:
    """The library finds runs through an entry point, without importing the serving layer."""
    assert run_checkpoint_source in checkpoint_sources()
    assert run_checkpoint_source("reverse-rope") is None  # not a run id: not this source's
    assert new_run_id().startswith("run-") and len(new_run_id()) == 4 + 32 and new_run_id() != new_run_id()


def test_run_ids_resolve_in_the_runs_folder_only(
    saved, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, model = saved
    root = tmp_path / "runs"
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(root))
    run_id = "run-" + "ab" * 16
    shutil.copytree(folder, root / run_id)
    ckpt = load_checkpoint(run_id)
    src, tgt = torch.tensor([[5, 6, 2]]), torch.tensor([[1, 6]])
    assert torch.equal(ckpt.model(src, tgt), model(src, tgt)) and ckpt.name == run_id
    for bad, message in [
        ("run-" + "cd" * 16, "unknown or expired run"),
        ("run-12", "not a run id"),
        ("run-" + "AB" * 16, "not a run id"),
    ]:
        with pytest.raises(CheckpointError, match=message):
            load_checkpoint(bad)
    (root / ("run-" + "ef" * 8)).mkdir()  # a run still training: a folder, no model yet
    with pytest.raises(CheckpointError, match="no saved model yet"):
        load_checkpoint("run-" + "ef" * 8)
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(CHECKPOINTS_DIR / "sub"))
    with pytest.raises(ConfigError, match="inside the shipped checkpoints"):
        runs_dir()


def test_cli_accepts_a_run_id(saved, tmp_path: Path) -> None:

    folder, _ = saved
    root = tmp_path / "runs"
    run_id = "run-" + "0f" * 10
    shutil.copytree(folder, root / run_id)
    env = {**os.environ, "ATTENTION_LAB_RUNS_DIR": str(root)}
    cmd = [sys.executable, "-m", "transformer_core", "eval", run_id, "--lengths", "3", "--samples", "4"]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["checkpoint"] == run_id
    missing = subprocess.run(
        [*cmd[:4], "run-" + "0e" * 10], capture_output=True, text=True, env=env, timeout=120
    )
    assert missing.returncode == 2 and "unknown or expired run" in missing.stderr
