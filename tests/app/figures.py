"""Reading what an AppTest run sent to the browser: plotly figures and text elements."""

from __future__ import annotations

import base64
import json

import numpy as np
from lab.plots import heatmap_values
from streamlit.testing.v1 import AppTest


def array(value: object) -> np.ndarray:
    """A plotly JSON array: plain list or {"dtype", "bdata", "shape"}."""
    if isinstance(value, dict) and "bdata" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", len(arr))).split(",")]
        return arr.reshape(shape)
    return np.asarray(value, dtype=float)


def charts(at: AppTest) -> dict[str, dict]:
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def heatmaps(fig: dict) -> list[np.ndarray]:
    """Every heatmap's values as sent: exact float32 for a single map, 1e-4 steps in a grid."""
    return [heatmap_values(t) for t in fig["data"] if t["type"] == "heatmap"]


def texts(at: AppTest, kind: str) -> list[str]:
    return [e.value for e in at.get(kind)]
