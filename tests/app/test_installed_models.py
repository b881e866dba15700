"""Imported models in ATTENTION_LAB_MODELS_DIR (issue 25, item 5): found by name through the
serving layer's checkpoint source (never outside the folder), listed in the explorers'
checkpoint choices with their size, and opened on /gpt like a shipped model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.models.resources import parameter_count
from attention_lab.serving import backends
from transformer_core.errors import ConfigError
from transformer_core.io.checkpoint import CHECKPOINTS_DIR, META_FILE, load_checkpoint, resolve_checkpoint

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A models folder holding 'my-gpt' (a copy of gpt-learned) and a folder that is no model."""
    folder = tmp_path / "models"
    shutil.copytree(CHECKPOINTS_DIR / "gpt-learned", folder / "my-gpt")
    meta = json.loads((folder / "my-gpt" / META_FILE).read_text())
    (folder / "my-gpt" / META_FILE).write_text(json.dumps({**meta, "name": "my-gpt"}))
    (folder / "not-a-model").mkdir()
    monkeypatch.setenv("ATTENTION_LAB_MODELS_DIR", str(folder))
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path / "runs"))
    return folder


def test_a_model_in_the_folder_opens_by_name_and_nothing_leaves_it(models: Path) -> None:
    assert backends.installed_models() == ["my-gpt"]
    assert resolve_checkpoint("my-gpt") == models / "my-gpt"
    ours, shipped = load_checkpoint("my-gpt"), load_checkpoint("gpt-learned")
    assert ours.meta["weights_sha256"] == shipped.meta["weights_sha256"]
    for name in ("../models/my-gpt", "not-a-model", "MY-GPT", "my-gpt/", ""):
        assert backends.model_checkpoint_source(name) is None


def test_a_missing_models_folder_is_a_clear_setting_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ATTENTION_LAB_MODELS_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match="ATTENTION_LAB_MODELS_DIR: .* is not a folder"):
        backends.installed_models()
    monkeypatch.delenv("ATTENTION_LAB_MODELS_DIR")
    assert backends.installed_models() == [] and backends.model_checkpoint_source("gpt-learned") is None


def test_parameter_counts_read_as_people_say_them() -> None:
    assert [parameter_count(n) for n in (124_439_808, 1_557_611_200, 81_912, 950)] == [
        "124M",
        "1.56B",
        "81.9k",
        "950",
    ]


def test_the_gpt_explorer_lists_and_opens_an_imported_model(models: Path) -> None:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.run()
    at.switch_page("views/gpt.py")
    at.query_params = {"checkpoint": "my-gpt", "text": "The for statement", "max_new": "10"}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    picker = at.selectbox(key="gpt_checkpoint")
    assert picker.value == "my-gpt"
    params = json.loads((models / "my-gpt" / META_FILE).read_text())["parameters"]
    assert picker.format_func("my-gpt") == f"my-gpt · {parameter_count(params)} parameters"
    assert "gpt-sinusoidal" in picker.options and "my-gpt" in [o.split(" · ")[0] for o in picker.options]
