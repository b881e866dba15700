"""Reading what an AppTest run sent to the browser: plotly figures and text elements."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from lab import charts as lab_charts
from lab.plots import heatmap_values
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

from transformer_core.io.checkpoint import RUNS_ENV, load_checkpoint, save_checkpoint


def array(value: object) -> np.ndarray:
    """A plotly JSON array: plain list or {"dtype", "bdata", "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", len(arr))).split(",")]
        return arr.reshape(shape)
    return np.asarray(value, dtype=float)


def charts(at: AppTest) -> dict[str, dict]:
    """key -> spec of every chart the run sent: the canvas charts (lab.charts) as their JSON
    spec, plotly figures (the lesson pages) as their figure JSON."""
    found = {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    for c in at.get("bidi_component"):
        found[c.key] = json.loads(c.proto.json)
    return found


def heatmaps(fig: dict) -> list[np.ndarray]:
    """Every map's values as sent: exact float32 for a single map, 1e-4 steps in a grid."""
    if "kind" in fig:
        return lab_charts.values(fig)
    return [heatmap_values(t) for t in fig["data"] if t["type"] == "heatmap"]


def texts(at: AppTest, kind: str) -> list[str]:
    return [e.value for e in at.get(kind)]


def download_files(monkeypatch: pytest.MonkeyPatch, run: Callable[[], AppTest]) -> dict[str, str]:
    """label -> content of every download button the page run by `run` offers.

    AppTest has no server to fetch a download from, so record what each button was given
    (text, bytes, or the callable that builds the file on click) and produce it here."""
    given: dict[str, object] = {}
    original = DeltaGenerator.download_button

    def recording(self: DeltaGenerator, label: str, data: object, *args: object, **kwargs: object) -> object:
        given[label] = data
        return original(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    run()
    files = {}
    for label, data in given.items():
        content = data() if callable(data) else data
        files[label] = content.decode() if isinstance(content, bytes) else str(content)
    return files


def saved_runs(monkeypatch: pytest.MonkeyPatch, runs: Path, shipped: str, *run_ids: str) -> None:
    """Store the shipped checkpoint's model as finished /train runs under these ids (the
    first saved, the others exact copies of its files) in a runs folder of their own."""
    monkeypatch.setenv(RUNS_ENV, str(runs))
    ckpt = load_checkpoint(shipped)
    first = runs / run_ids[0]
    save_checkpoint(
        first,
        ckpt.model,
        ckpt.tokenizer,
        train_args=ckpt.meta.get("train_args"),
        metrics=ckpt.metrics,
        command="trained on the /train page as a test",
    )
    for run_id in run_ids[1:]:
        shutil.copytree(first, runs / run_id)
