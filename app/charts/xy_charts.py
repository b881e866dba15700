""" "xy" charts for the lessons and /train: curves, points, histograms and arrows over numbers,
in `panel`s side by side (`xy_spec`), and every column of a frame as a curve (`frame_lines`).
Specs only; `attention_lab.charts.component.show` mounts them."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from attention_lab.charts.specs import MARKER_SHAPES, SERIES_COLORS, encoded


def look(i: int) -> dict[str, str]:
    """The i-th series' colour and marker shape (line keywords): no two of the first eight alike."""
    return {"color": SERIES_COLORS[i % len(SERIES_COLORS)], "marker": MARKER_SHAPES[i % len(MARKER_SHAPES)]}


def line(
    name: str,
    x: np.ndarray,
    y: np.ndarray,
    *,
    color: str,
    marker: str | None = None,
    dash: str | None = None,
    legend: bool = True,
) -> dict[str, Any]:
    """A curve through (x, y) points, (n,) each; NaN in y leaves a gap. marker: a MARKER_SHAPES
    name drawn on its points (every one up to 40, else 20 spread along it), so curves differ
    by more than colour; dash: "dash", "dot", "dashdot" or None (solid)."""
    return {"type": "line", "name": name, "color": color, "x": _xy(x), "y": _xy(y), "marker": marker,
            "dash": dash, "legend": legend}  # fmt: skip


def points(
    name: str,
    x: np.ndarray,
    y: np.ndarray,
    *,
    color: str,
    sizes: np.ndarray | None = None,
    labels: list[str] | None = None,
    star: bool = False,
    opacity: float = 1.0,
    hover_labels: list[str] | None = None,
) -> dict[str, Any]:
    """Markers at (x, y), (n,) each, of `sizes` px (default 10), each named by `labels`
    beside it (or, too many to write, by `hover_labels` in its tip and table row only); a star
    (e.g. the context vector) is named on its right."""
    return {
        "type": "points", "name": name, "color": color, "x": _xy(x), "y": _xy(y),
        "sizes": None if sizes is None else [round(float(v), 2) for v in np.ravel(sizes)],
        "labels": labels, "hover_labels": hover_labels, "symbol": "star" if star else "circle",
        "opacity": opacity,
    }  # fmt: skip


def histogram(
    name: str, centres: np.ndarray, heights: np.ndarray, width: float, *, color: str
) -> dict[str, Any]:
    """Bars of `width` (data units) centred at `centres`, (n,) each: a binned distribution."""
    return {"type": "bars", "name": name, "color": color, "x": _xy(centres), "y": _xy(heights),
            "bar_width": float(width)}  # fmt: skip


def arrows(x: np.ndarray, y: np.ndarray, *, color: str) -> dict[str, Any]:
    """Arrows from the origin to each (x, y), (n,) each."""
    return {"type": "arrows", "name": "", "color": color, "x": _xy(x), "y": _xy(y), "hover": False,
            "legend": False}  # fmt: skip


def panel(
    series: list[dict[str, Any]],
    *,
    title: str = "",
    x_title: str = "",
    y_title: str = "",
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    x_log: bool = False,
    x_ticks: list[float] | None = None,
    y_log: bool = False,
    y_ticks: list[tuple[float, str]] | None = None,
    equal: bool = False,
    vlines: list[tuple[float, str]] = (),  # type: ignore[assignment]
    width: float = 1.0,
    end_labels: bool = False,
) -> dict[str, Any]:
    """One plot of an xy chart: its series, axis titles and ranges (else fitted to the data),
    a log x axis (ticks at `x_ticks`), a log y axis (ticks at `y_ticks`, (value, label) pairs: its
    data must be positive), equal units across and up (`equal`: circles stay
    round), dashed vertical lines at x with their text, its share of the chart's width, and
    (`end_labels`) each curve named at its last point, so a curve is told by more than colour."""
    return {
        "series": series, "title": title, "x_title": x_title, "y_title": y_title,
        "x_range": None if x_range is None else [float(v) for v in x_range],
        "y_range": None if y_range is None else [float(v) for v in y_range],
        "x_log": x_log, "x_ticks": None if x_ticks is None else [[float(v), f"{v:g}"] for v in x_ticks],
        "y_log": y_log, "y_ticks": None if y_ticks is None else [[float(v), label] for v, label in y_ticks],
        "equal": equal, "vlines": [{"x": float(x), "text": text} for x, text in vlines], "width": width,
        "end_labels": end_labels,
    }  # fmt: skip


def xy_spec(
    panels: list[dict[str, Any]], *, title: str = "", height: int = 340, digits: int = 4, file: str = "chart"
) -> dict[str, Any]:
    """Plots side by side (`panel`s) with one legend of every named series under the title;
    hover names the nearest point (or the bar under the pointer) with `digits` decimals."""
    return {"kind": "xy", "title": title, "height": int(height), "panels": panels, "digits": digits,
            "tick_px": 13, "file": file}  # fmt: skip


def frame_lines(
    frame: pd.DataFrame,
    *,
    x_title: str = "step",
    y_title: str = "",
    y_range: tuple[float, float] | None = None,
    dashes: dict[str, str] | None = None,
    height: int = 240,
    file: str = "curves",
) -> dict[str, Any]:
    """Every column of `frame` as a curve over its index (steps), each its own colour and
    marker shape and, with more than one, named at its end; dashes: column -> "dash" | "dot" |
    "dashdot" (e.g. one style per layer)."""
    x = frame.index.to_numpy(dtype=np.float64)
    series = [
        line(str(name), x, frame[name].to_numpy(dtype=np.float64), **look(i), dash=(dashes or {}).get(name))
        for i, name in enumerate(frame.columns)
    ]  # fmt: skip
    curves = panel(series, x_title=x_title, y_title=y_title, y_range=y_range, end_labels=len(series) > 1)
    return xy_spec([curves], height=height, file=file, digits=4)


def _xy(values: np.ndarray) -> dict[str, Any]:
    return encoded(np.ravel(np.asarray(values, dtype=np.float64)))
