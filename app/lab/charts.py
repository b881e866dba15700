"""Charts drawn on a canvas in the page (the explorers, /heads, the /train scrubber):
attention maps (a grid of every head, one head large, any labelled matrix), score maps over
layers x heads, and grouped bars.

Why not plotly: loading plotly.js costs ~2.7 s of a 2-core box's main thread before the
first chart shows (benchmarks/bench_plotly_floor.py), so a lecturer's link took 5-7 s to
draw. These charts are one small script (app/static/charts.js, a Streamlit v2 component mounted in
the page, no iframe) that paints each head as one image: hover names query, key and value
of every cell (or each bar's values), a click on a grid's head selects it, the PNG button
saves the chart with its title.

A chart is a plain JSON spec (`grid_spec`, `maps_spec`, `head_spec`, `matrix_spec`, `bars_spec`), built
once per input and shared read-only by every run and user; `values(spec)` reads the numbers
back as the browser gets them. Weights travel as float32 for one head and as uint16 steps of
1e-4 in a grid (the hover still reads "12.34%", at half the bytes).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from lab.plots import COLORSCALE, colorscale_steps

GRID_STEP = 1e-4  # a grid's weights travel in these steps (uint16)
FUTURE_COLOR = "rgba(220, 38, 38, 0.9)"  # red outline: weight where the causal mask would forbid it
BAR_COLORS = ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d"]  # Streamlit's chart colours
SCRIPT = Path(__file__).resolve().parents[1] / "static" / "charts.js"  # served at /app/static/charts.js
LOADER = """
let loaded = null;  // the drawing module, once fetched: later charts draw without waiting
export default function (component) {
  if (loaded) return loaded.default(component);
  let cleanup = null, gone = false;
  (window.__attentionLabCharts ||= import(new URL(%r, window.location.origin).href)).then(
    (m) => {
      loaded = m;
      if (!gone) cleanup = m.default(component);
    },
    (err) => {  // say so on the page instead of an empty space
      window.__attentionLabCharts = null;  // the next chart tries again
      const note = document.createElement("div");
      note.style.cssText = "padding:8px;border:1px solid #f5a3a3;border-radius:4px;color:#7d1a1a";
      note.textContent = "This chart could not be drawn: its script (app/static/charts.js) " +
        `did not load (${err}). Reload the page.`;
      component.parentElement.replaceChildren(note);
    }
  );
  return () => { gone = true; if (cleanup) cleanup(); };
}
"""


def _script() -> str:
    """The component's JS. Where the server serves app/static (server.enableStaticServing,
    set in .streamlit/config.toml) a 0.4 kB loader that imports charts.js once per browser
    page; else the whole script, which Streamlit would then send with every chart of every
    run (18 kB each, 0.12 MB of a /gpt page)."""
    text = SCRIPT.read_text(encoding="utf-8")
    if not st.get_option("server.enableStaticServing"):
        return text
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    version = hashlib.sha256(text.encode()).hexdigest()[:12]  # a changed script is fetched anew
    path = f"/{base}/app/static/charts.js" if base else "/app/static/charts.js"
    return LOADER % f"{path}?v={version}"


_component = st.components.v2.component(
    "attention_lab.chart",
    js=_script(),
    css="""
.lab-chart { position: relative; }
.lab-chart canvas { display: block; }
.lab-chart .tip { position: absolute; z-index: 5; pointer-events: none; background: #fff;
  border: 1px solid #ccc; border-radius: 4px; padding: 4px 8px; font-size: 13px; line-height: 1.35;
  white-space: nowrap; box-shadow: 0 2px 6px rgba(0,0,0,.15); }
.lab-chart .save { position: absolute; top: 2px; right: 2px; font-size: 11px; padding: 1px 6px;
  border: 1px solid #ccc; border-radius: 4px; background: #fff; color: #555; cursor: pointer; opacity: 0; }
.lab-chart:hover .save { opacity: 1; }
""",
)


# ---------------------------------------------------------------- labels that stay readable


def tick_font(n: int) -> dict:
    return {"size": 13 if n <= 20 else 11 if n <= 40 else 8}


def tick_angle(labels: list[str], width_px: float = 240.0) -> int:
    """Upright labels while neighbours fit side by side; turned when multi-character ones
    such as n<eos> or <pad><pad> would run into each other.

    width_px: the plot area of a large head beside a grid at 1280x720 (its column less the
    query labels and the colour bar); a character of the 13 px tick font takes up to 8 px,
    plus a gap, so two neighbours need (len(a) + len(b)) * 4.5 px between their centres."""
    if all(len(t) <= 1 for t in labels):
        return 0  # turning single characters gains nothing
    slot = width_px / max(len(labels), 1)
    widest_pair = max((len(a) + len(b) for a, b in zip(labels, labels[1:], strict=False)), default=0)
    return 0 if widest_pair * 4.5 <= slot else -90


def label_step(n: int, span_px: float, font_px: int) -> int:
    """Label every k-th of n rows spread over span_px so that labels of font_px stay 2 px
    more than their size apart; hover still names every cell."""
    return max(1, int(np.ceil((font_px + 2) * n / max(span_px, 1.0))))


def _encoded(values: np.ndarray, *, grid: bool) -> dict[str, Any]:
    """(rows, cols) values as {"dtype", "bdata", "shape", "scale"}: uint16 steps of 1e-4
    for a grid's weights in [0, 1], float32 (NaN where masked) otherwise."""
    if grid:
        steps = np.rint(np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0) / GRID_STEP)
        arr, dtype, scale = steps.astype("<u2"), "u2", GRID_STEP
    else:
        arr, dtype, scale = np.asarray(values, dtype="<f4"), "f4", 1.0
    data = base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode("ascii")
    return {"dtype": dtype, "bdata": data, "shape": list(arr.shape), "scale": scale}


def values(spec: dict[str, Any]) -> list[np.ndarray]:
    """Every panel's (rows, cols) values (or every bar series' (n,) values) as the browser
    decodes them (grids in 1e-4 steps)."""
    out = []
    for panel in spec.get("panels") or spec["series"]:
        z = panel["z"]
        raw = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]).newbyteorder("<"))
        out.append(raw.reshape(z["shape"]).astype(np.float64) * z["scale"])
    return out


def _colorbar(title: str, zmin: float, zmax: float) -> dict[str, Any]:
    return {"title": title, "ticks": [float(v) for v in np.linspace(zmin, zmax, 6)]}


def _grid(**fields: Any) -> dict[str, Any]:
    """A "grid" chart (small maps, `columns` a row): these defaults, `fields` over them."""
    return {
        "kind": "grid",
        "title": "",
        "selected": None,
        "clickable": False,
        "zmin": 0.0,
        "zmax": 1.0,
        "colors": colorscale_steps(COLORSCALE),
        "colorbar": None,
        "percent": False,
        "value_name": "value",
        "tick_px": 12,
        "outline": None,
        **fields,
    }


def grid_spec(
    attention: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str],
    *,
    title: str = "",
    cell_titles: list[list[str]] | None = None,
    selected: tuple[int, int] | None = None,
    zmax: float = 1.0,
    cell_px: int = 150,
    colorbar: bool = False,
    clickable: bool = True,
    file: str = "attention_grid",
) -> dict[str, Any]:
    """Small multiples of (L, H, Tq, Tk) weights in [0, 1]: row = layer, column = head, one
    colour scale; hover shows each cell's weight in percent; a click selects the head."""
    L, H, _, _ = attention.shape
    panels = [
        {
            "layer": layer,
            "head": head,
            "title": cell_titles[layer][head] if cell_titles else f"L{layer} H{head}",
            "z": _encoded(attention[layer, head], grid=True),
        }
        for layer in range(L)
        for head in range(H)
    ]
    return _grid(
        title=title,
        height=int(max(200, cell_px * L + (60 if title else 40))),
        columns=H,
        panels=panels,
        x=list(key_tokens),
        y=list(query_tokens),
        selected=list(selected) if selected is not None else None,
        clickable=clickable,
        zmax=float(zmax),
        colorbar=_colorbar("weight", 0.0, zmax) if colorbar else None,
        percent=True,
        value_name="weight",
        file=file,
    )


def _digits(values: np.ndarray, least: int) -> int:
    """Decimals that show the largest value of a map with two significant digits (at least
    `least`, at most 4): gradients of 0.0012 would all read 0.00."""
    finite = np.abs(np.asarray(values, dtype=np.float64))
    top = float(np.nanmax(finite)) if np.isfinite(finite).any() else 0.0
    return least if top == 0 or top >= 10.0**-least * 10 else min(4, int(np.ceil(-np.log10(top))) + 1)


def maps_spec(
    maps: list[dict[str, Any]],
    *,
    columns: int,
    row_titles: list[str] | None = None,
    title: str = "",
    cell_px: int = 46,
    digits: int | None = 2,
    y_title: str = "layer",
    x_title: str = "head",
    file: str = "maps",
) -> dict[str, Any]:
    """Small maps over (layer, head), each with its own colour range: one per entry of `maps`
    ({"title", "values" (L, H) with NaN where not defined, "zmin", "zmax", "colorscale",
    "value_name"}), `columns` a row, rows numbered as layers and columns as heads, every
    cell's value written in it (at least `digits` decimals, more for a map of small values;
    None: hover only) when the cell is large enough."""
    n_layers, n_heads = np.shape(maps[0]["values"])
    rows = -(-len(maps) // columns)
    per_row = cell_px * n_layers + 26 + (21 if row_titles else 0) + 24
    return _grid(
        title=title,
        height=int(max(150, rows * per_row + (30 if title else 10))),
        columns=columns,
        panels=[
            {
                "layer": None,
                "head": None,
                "title": m["title"],
                "z": _encoded(np.asarray(m["values"], dtype=np.float32), grid=False),
                "zmin": float(m["zmin"]),
                "zmax": float(m["zmax"]),
                "colors": colorscale_steps(m["colorscale"]),
                "value_name": m.get("value_name", m["title"]),
                "digits": None if digits is None else _digits(m["values"], digits),
            }
            for m in maps
        ],
        x=[str(h) for h in range(n_heads)],
        y=[str(la) for la in range(n_layers)],
        x_title=x_title,
        y_title=y_title,
        axis_labels=True,
        row_titles=row_titles,
        digits=4,
        tick_px=11,
        file=file,
    )


def head_spec(
    weights: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str],
    title: str = "",
    *,
    zmin: float = 0.0,
    zmax: float = 1.0,
    highlight: np.ndarray | None = None,
    highlight_name: str = "future position",
    value_name: str = "weight",
    colorscale: str = COLORSCALE,
    height: int = 460,
    file: str = "attention_head",
) -> dict[str, Any]:
    """One (Tq, Tk) matrix, exact values on hover, query tokens down the side (every k-th
    when rows are dense), key tokens along the top (turned when neighbours would touch);
    cells where highlight is True get a red outline."""
    tick = tick_font(len(query_tokens))["size"]
    top = 100 if tick_angle(key_tokens) else 75
    cells = np.argwhere(highlight) if highlight is not None else np.empty((0, 2), dtype=int)
    return {
        "kind": "head",
        "title": title,
        "height": int(height),
        "columns": 1,
        "panels": [{"layer": None, "head": None, "title": title, "z": _encoded(weights, grid=False)}],
        "x": list(key_tokens),
        "y": list(query_tokens),
        "x_title": "key",
        "y_title": "query",
        "x_angle": tick_angle(key_tokens),
        "y_every": label_step(len(query_tokens), height - top, tick),
        "selected": None,
        "clickable": False,
        "zmin": float(zmin),
        "zmax": float(zmax),
        "colors": colorscale_steps(colorscale),
        "colorbar": _colorbar(value_name, zmin, zmax),
        "percent": False,
        "value_name": value_name,
        "tick_px": tick,
        "outline": (
            {"name": highlight_name, "color": FUTURE_COLOR, "cells": cells.tolist()} if len(cells) else None
        ),
        "file": file,
    }


def matrix_spec(
    matrix: np.ndarray,
    row_labels: list[str],
    title: str = "",
    *,
    height: int = 300,
    value_name: str = "value",
    row_name: str = "key",
    file: str = "vectors",
) -> dict[str, Any]:
    """A (rows, dims) matrix of vectors (e.g. every key vector of one head) in diverging
    colours (red above zero, blue below). Grows past `height` (up to 520 px) so that rows
    keep readable 12 px labels; beyond that every k-th row is labelled (issue 11 #5)."""
    m = np.asarray(matrix, dtype=np.float32)
    height = max(height, min(520, 15 * len(row_labels) + 110))
    bound = float(np.abs(m).max()) or 1.0
    dims = [str(d) for d in range(m.shape[1])]
    spec = head_spec(
        m,
        list(row_labels),
        dims,
        title,
        zmin=-bound,
        zmax=bound,
        value_name=value_name,
        colorscale="RdBu",
        height=height,
        file=file,
    )
    spec["colors"] = [[round(1 - at, 6), c] for at, c in reversed(spec["colors"])]  # red = positive
    spec.update(x_title="dimension", y_title=row_name, x_angle=0, x_every=label_step(len(dims), 400, 16))
    spec["y_every"] = label_step(len(row_labels), height - 110, 12)
    spec["tick_px"] = 12
    return spec


def bars_spec(
    labels: list[str],
    series: dict[str, np.ndarray],
    title: str = "",
    *,
    height: int = 280,
    x_title: str = "",
    y_title: str = "probability",
    file: str = "bars",
) -> dict[str, Any]:
    """Grouped bars over labels (tokens, vocabulary entries, vector dimensions), one series
    per entry of `series` in the theme's colour cycle; hover shows every series' value."""
    n = len(labels)
    tick = tick_font(n)["size"]
    return {
        "kind": "bars",
        "title": title,
        "height": int(height),
        "x": [str(t) for t in labels],
        "x_title": x_title,
        "y_title": y_title,
        "x_angle": tick_angle([str(t) for t in labels], 600),
        "x_every": label_step(n, 600, tick * (2 if n > 20 else 1)),
        "series": [{"name": name, "z": _encoded(np.ravel(v), grid=False)} for name, v in series.items()],
        "legend": len(series) > 1,
        "colors": BAR_COLORS,
        "digits": 4,
        "tick_px": tick,
        "file": file,
    }


def show(
    spec: dict[str, Any],
    *,
    key: str,
    on_head: Callable[[int, int], None] | None = None,
    where: Any = None,
) -> None:
    """Mount a chart (in `where`, a container or column, else the page); on_head(layer, head)
    runs before the rerun a click on a grid's head starts."""

    def clicked() -> None:
        picked = (st.session_state.get(key) or {}).get("head") or {}
        try:
            layer, head = int(picked["layer"]), int(picked["head"])
        except (KeyError, TypeError, ValueError):
            return  # not a head click: nothing to select
        if on_head is not None:
            on_head(layer, head)

    with where if where is not None else contextlib.nullcontext():
        _component(key=key, data=spec, height=spec["height"], on_head_change=clicked)
