"""Reading what an AppTest run sent to the browser: chart specs and text elements."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.charts import specs as lab_charts
from attention_lab.frame.streamlit_private import DeltaGenerator
from attention_lab.serving.settings import RUNS_DIR_ENV
from transformer_core.io.checkpoint import load_checkpoint, save_checkpoint

CHART = "attention_lab.chart"  # the canvas charts' component (attention_lab.charts.component)


def charts(at: AppTest) -> dict[str, dict]:
    """key -> spec of every chart (attention_lab.charts.specs, drawn on a canvas) the run sent."""
    found = at.get("bidi_component")
    return {c.key: json.loads(c.proto.bytes) for c in found if c.proto.component_name == CHART}


def heatmaps(spec: dict) -> list[np.ndarray]:
    """Every map's values as sent: exact float32 for a single map, 1e-4 steps in a grid."""
    return lab_charts.values(spec)


class _TableReader(HTMLParser):
    """[(key, [header row, body rows...])] of every attention_lab.frame.tables table in an HTML text."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "div" and "lab-table" in (found.get("class") or ""):
            self.tables.append((found.get("data-key") or "", []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _cell(text: str) -> object:
    """A cell as the page shows it, read back: a number, a truth value, NaN for the dash."""
    if text == "—":
        return np.nan
    if text in ("yes", "no"):
        return text == "yes"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text.replace("−", "-").replace("∞", "inf"))
    except ValueError:
        return text


def tables(at: AppTest) -> dict[str, pd.DataFrame]:
    """key -> every HTML table (attention_lab.frame.tables) the run showed, as the numbers on screen; the
    first column is the index where the table has row headers (an empty corner cell)."""
    found = {}
    for element in at.get("html"):
        reader = _TableReader()
        reader.feed(element.value)
        for key, (header, *rows) in reader.tables:
            frame = pd.DataFrame([[_cell(c) for c in row] for row in rows], columns=header)
            if header and header[0] == "":
                frame = frame.set_index("").rename_axis(None)
            found[key] = frame
    return found


def texts(at: AppTest, kind: str) -> list[str]:
    return [e.value for e in at.get(kind)]


@dataclass(frozen=True)
class Download:
    """What a download button offers: the file's name and its content as text."""

    file_name: str
    text: str


Offered = dict[str, Download]  # a button's label -> what it offers


def downloads(monkeypatch: pytest.MonkeyPatch, run: Callable[[], AppTest]) -> tuple[AppTest, Offered]:
    """The run `run` makes, and label -> what each of its download buttons offers.

    AppTest has no server to fetch a download from, so record what each button was given
    (text, bytes, or the callable that builds the file on click) and produce it here."""
    given: dict[str, tuple[object, str]] = {}
    original = DeltaGenerator.download_button

    def recording(self: DeltaGenerator, label: str, data: object, *args: object, **kwargs: object) -> object:
        given[label] = (data, str(kwargs.get("file_name")))
        return original(self, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", recording)
    at = run()
    found = {}
    for label, (data, file_name) in given.items():
        content = data() if callable(data) else data
        found[label] = Download(file_name, content.decode() if isinstance(content, bytes) else str(content))
    return at, found


def download_files(monkeypatch: pytest.MonkeyPatch, run: Callable[[], AppTest]) -> dict[str, str]:
    """label -> content of every download button the page run by `run` offers."""
    return {label: d.text for label, d in downloads(monkeypatch, run)[1].items()}


def saved_runs(monkeypatch: pytest.MonkeyPatch, runs: Path, shipped: str, *run_ids: str) -> None:
    """Store the shipped checkpoint's model as finished /train runs under these ids (the
    first saved, the others exact copies of its files) in a runs folder of their own."""
    monkeypatch.setenv(RUNS_DIR_ENV, str(runs))
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
