"""What every lesson page (/basics, /positions, /variance) does the same way: range checks
for its link values, a chart writer under the page's key prefix, and matrices as tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from attention_lab.charts import component


def in_range(lo: float, hi: float) -> Callable[[float], bool]:
    """A `valid` check for state.init_state: a link's value must lie in [lo, hi]."""
    return lambda v: lo <= v <= hi


def chart_writer(prefix: str) -> Callable[[dict, str], None]:
    """chart(spec, key) for a page: mounts the chart under prefix + key, so pages never share a key."""

    def chart(spec: dict, key: str) -> None:
        component.show(spec, key=prefix + key)

    return chart


def matrix_frame(matrix: np.ndarray, rows: Sequence[str], cols: Sequence[str]) -> pd.DataFrame:
    """A matrix with named rows and columns, unrounded: tables.show(digits=...) formats it.
    The names stay Python strings (object dtype): a table only reads them back."""
    names = pd.Index(list(rows), dtype=object), pd.Index(list(cols), dtype=object)
    return pd.DataFrame(np.asarray(matrix, dtype=float), index=names[0], columns=names[1])
