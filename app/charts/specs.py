"""Every chart of the lab, drawn on a canvas in the page: attention maps (a grid of every
head, one head large, any labelled matrix), score maps over layers x heads, grouped bars, and
"xy" plots (curves, points, histograms, arrows over numbers) for the lessons and /train.

Why not plotly: loading plotly.js costs ~2.7 s of a 2-core box's main thread before the
first chart shows (measured in session 4 with a bare page of trivial plotly heatmaps), so a
lecturer's link took 5-7 s to draw. These charts are a few small native ES modules
(app/static/charts.js, which mounts a chart as a Streamlit v2 component in the page, no iframe,
and app/static/charts/: one module per kind of chart over shared axes, colour and pointer code)
that paint each map as one image: hover names query, key and value of every cell (each bar's
values, the nearest point), a click on a grid's head selects it, the PNG button saves the
chart with its title.

A chart is a plain JSON spec (`grid_spec`, `maps_spec`, `head_spec`, `matrix_spec`,
`bars_spec`, `xy_spec` of `panel`s of `line`/`points`/`histogram`/`arrows` series), built
once per input and shared read-only by every run and user; `values(spec)` reads the numbers
back as the browser gets them. Weights travel as float32 for one head and as uint16 steps of
1e-4 in a grid (the hover still reads "12.34%", at half the bytes); large lesson maps as
uint16 steps over their colour range.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

COLORSCALE = "Blues"  # attention weights
#: px under each chart for its buttons (Show as table, PNG, SVG), so they never cover it
TOOLS_PX = 22
#: attention weights are written with this many decimals everywhere: tips, chart tables, page tables
WEIGHT_DIGITS = 3


def weight_text(w: float) -> str:
    """An attention weight as tips, tables and captions write it: WEIGHT_DIGITS decimals; one
    too small for them but not zero in e-notation ("8.7e-4"), so no non-zero weight reads 0.000."""
    if w != 0 and abs(w) < 0.5 * 10**-WEIGHT_DIGITS:
        return f"{w:.1e}".replace("e-0", "e-")
    return f"{w:.{WEIGHT_DIGITS}f}"


#: ColorBrewer's sequential and diverging scales (the tables plotly names the same way), evenly
#: spaced; "<name>_r" reverses one
COLORSCALES: dict[str, list[str]] = {
    "Blues": ["247,251,255", "222,235,247", "198,219,239", "158,202,225", "107,174,214", "66,146,198",
              "33,113,181", "8,81,156", "8,48,107"],
    "Greys": ["255,255,255", "240,240,240", "217,217,217", "189,189,189", "150,150,150", "115,115,115",
              "82,82,82", "37,37,37", "0,0,0"],
    "Reds": ["255,245,240", "254,224,210", "252,187,161", "252,146,114", "251,106,74", "239,59,44",
             "203,24,29", "165,15,21", "103,0,13"],
    "Oranges": ["255,245,235", "254,230,206", "253,208,162", "253,174,107", "253,141,60", "241,105,19",
                "217,72,1", "166,54,3", "127,39,4"],
    "Purples": ["252,251,253", "239,237,245", "218,218,235", "188,189,220", "158,154,200", "128,125,186",
                "106,81,163", "84,39,143", "63,0,125"],
    "RdBu": ["103,0,31", "178,24,43", "214,96,77", "244,165,130", "253,219,199", "247,247,247",
             "209,229,240", "146,197,222", "67,147,195", "33,102,172", "5,48,97"],
}  # fmt: skip


@functools.cache
def colorscale_steps(name: str) -> list[list[Any]]:
    """[[position in 0..1, "rgb(r,g,b)"], ...] of a named scale, evenly spaced."""
    base, reverse = (name[:-2], True) if name.endswith("_r") else (name, False)
    colors = COLORSCALES[base][::-1] if reverse else COLORSCALES[base]
    return [[round(i / (len(colors) - 1), 6), f"rgb({c})"] for i, c in enumerate(colors)]


GRID_STEP = 1e-4  # a grid's weights travel in these steps (uint16)
NAN_STEP = 65535  # the uint16 code of a missing value in a quantized map
FUTURE_COLOR = "rgba(220, 38, 38, 0.9)"  # red outline: weight where the causal mask would forbid it
MUTED = "#6b7280"  # grey: marked cells (padding), guide lines
#: series colours, in order: Okabe and Ito's colour-blind-safe set (its yellow, unreadable on
#: white, made brown; its black, lost on a dark page, the theme's text colour): under protan,
#: deutan and tritan vision every pair stays apart (tests/app/test_colour_vision.py)
SERIES_COLORS = ["#0072b2", "#e69f00", "#009e73", "#d55e00", "#56b4e9", "#cc79a7", "#8c6d31", "text"]
#: a curve's marker shapes, in order: with the colours, no two of the first eight curves look alike
MARKER_SHAPES = ["circle", "square", "triangle", "diamond", "triangle-down", "plus", "cross", "star"]
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


def encoded(
    values: np.ndarray, *, grid: bool = False, between: tuple[float, float] | None = None
) -> dict[str, Any]:
    """(rows, cols) or (n,) values as {"dtype", "bdata", "shape", "scale"[, "offset", "nan"]}:
    uint16 steps of 1e-4 for a grid's weights in [0, 1]; uint16 steps over `between` (lo, hi)
    for a large map (65,534 steps: hover keeps 4 decimals at half the bytes, 65535 = NaN);
    float32 (NaN where masked) otherwise."""
    extra: dict[str, Any] = {}
    if grid:
        steps = np.rint(np.clip(np.asarray(values, dtype=np.float64), 0.0, 1.0) / GRID_STEP)
        arr, dtype, scale = steps.astype("<u2"), "u2", GRID_STEP
    elif between is not None:
        lo, hi = between
        scale = (hi - lo) / (NAN_STEP - 1) or 1.0
        v = np.asarray(values, dtype=np.float64)
        steps = np.rint((np.clip(np.nan_to_num(v, nan=lo), lo, hi) - lo) / scale)
        arr, dtype = np.where(np.isnan(v), NAN_STEP, steps).astype("<u2"), "u2"
        extra = {"offset": float(lo), "nan": NAN_STEP}
    else:
        arr, dtype, scale = np.asarray(values, dtype="<f4"), "f4", 1.0
    data = base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode("ascii")
    return {"dtype": dtype, "bdata": data, "shape": list(arr.shape), "scale": scale, **extra}


def values(spec: dict[str, Any]) -> list[np.ndarray]:
    """Every panel's (rows, cols) values (every bar series' (n,) values; every xy series'
    (2, n) x and y, panel by panel) as the browser decodes them (grids in 1e-4 steps)."""
    if spec["kind"] == "xy":
        return [np.stack([_decoded(s["x"]), _decoded(s["y"])]) for p in spec["panels"] for s in p["series"]]
    return [_decoded(panel["z"]) for panel in spec.get("panels") or spec["series"]]


def _decoded(z: dict[str, Any]) -> np.ndarray:
    raw = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]).newbyteorder("<"))
    out = raw.reshape(z["shape"]).astype(np.float64) * z["scale"] + z.get("offset", 0.0)
    if "nan" in z:
        out[raw.reshape(z["shape"]) == z["nan"]] = np.nan
    return out


def _colorbar(title: str) -> dict[str, Any]:
    """A colour bar named `title`; charts.js ticks it at round values inside [zmin, zmax]."""
    return {"title": title}


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
        "digits": 4,
        "value_name": "value",
        "tick_px": 12,
        "outline": None,
        **fields,
    }


def grid_height(n_layers: int, cell_px: int, titled: bool) -> int:
    """A grid's height in px: cell_px per layer row, and room for its title (if any)."""
    return int(max(200, cell_px * n_layers + (60 if titled else 40)))


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
    description: str = "",
    value_name: str = "weight",
) -> dict[str, Any]:
    """Small multiples of (L, H, Tq, Tk) weights in [0, 1]: row = layer, column = head, one
    colour scale; hover shows each cell's value (value_name: what it is); a click selects the head."""
    L, H, _, _ = attention.shape
    panels = [
        {
            "layer": layer,
            "head": head,
            "title": cell_titles[layer][head] if cell_titles else f"L{layer} H{head}",
            "z": encoded(attention[layer, head], grid=True),
        }
        for layer in range(L)
        for head in range(H)
    ]
    return _grid(
        title=title,
        height=grid_height(L, cell_px, bool(title)),
        columns=H,
        panels=panels,
        x=list(key_tokens),
        y=list(query_tokens),
        selected=list(selected) if selected is not None else None,
        clickable=clickable,
        zmax=float(zmax),
        colorbar=_colorbar(value_name) if colorbar else None,
        digits=WEIGHT_DIGITS,
        value_name=value_name,
        file=file,
        description=description,
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
    colorbar: tuple[str, str, float, float] | None = None,
    file: str = "maps",
) -> dict[str, Any]:
    """Small maps over (layer, head), each with its own colour range: one per entry of `maps`
    ({"title", "values" (L, H) with NaN where not defined, "zmin", "zmax", "colorscale",
    "value_name"}), `columns` a row, rows numbered as layers and columns as heads, every
    cell's value written in it (at least `digits` decimals, more for a map of small values;
    None: hover only) when the cell is large enough. colorbar (title, colorscale, zmin,
    zmax): one bar at the right for the maps drawn on that scale."""
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
                "z": encoded(np.asarray(m["values"], dtype=np.float32), grid=False),
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
        digits=3,  # tips and the table view: scores with 3 decimals, as the /heads table writes them
        tick_px=11,
        file=file,
        **(
            {}
            if colorbar is None
            else {
                "colorbar": _colorbar(colorbar[0]),
                "colors": colorscale_steps(colorbar[1]),
                "zmin": float(colorbar[2]),
                "zmax": float(colorbar[3]),
            }
        ),
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
    cell_digits: int | None = None,
    dashed: bool = False,
    x_marker: tuple[float, str] | None = None,
    quantized: bool = False,
    description: str = "",
) -> dict[str, Any]:
    """One (Tq, Tk) matrix, exact values on hover, query tokens down the side (every k-th
    when rows are dense), key tokens along the top (turned when neighbours would touch);
    cells where highlight is True get a red outline (grey and dashed: `dashed`).

    cell_digits: each value written in its cell (when cells are large enough);
    x_marker: (column boundary, text), a dashed line between two columns, named;
    quantized: values travel as uint16 steps over [zmin, zmax] (a large map, half the bytes);
    description: what the map shows for this input, in a sentence (for screen readers)."""
    tick = tick_font(len(query_tokens))["size"]
    top = 100 if tick_angle(key_tokens) else 75
    cells = np.argwhere(highlight) if highlight is not None else np.empty((0, 2), dtype=int)
    outline = {"name": highlight_name, "color": MUTED if dashed else FUTURE_COLOR, "dash": dashed}
    return {
        "kind": "head",
        "title": title,
        "height": int(height),
        "columns": 1,
        "panels": [
            {
                "layer": None,
                "head": None,
                "title": title,
                "z": encoded(weights, between=(zmin, zmax) if quantized else None),
            }
        ],
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
        "colorbar": _colorbar(value_name),
        "digits": WEIGHT_DIGITS if value_name == "weight" else 4,
        "value_name": value_name,
        "tick_px": tick,
        "outline": {**outline, "cells": cells.tolist()} if len(cells) else None,
        "cell_digits": cell_digits,
        "x_marker": {"at": float(x_marker[0]), "text": x_marker[1]} if x_marker else None,
        "file": file,
        "description": description,
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
        colorscale="RdBu_r",  # red = positive
        height=height,
        file=file,
    )
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
    colors: list[str] | None = None,
    y_range: tuple[float, float] | None = None,
    values_shown: str | Callable[[float], str] | None = None,
    values_turned: bool = False,
    digits: int = 4,
    width_px: float = 600,
) -> dict[str, Any]:
    """Grouped bars over labels (tokens, vocabulary entries, vector dimensions), one series
    per entry of `series` in the theme's colour cycle (or `colors`); hover shows every
    series' value; values_shown (a format such as "{:.4f}") writes each bar's value above it
    (turned upright in narrow columns: values_turned); width_px: about the plot's width, for
    turning and thinning the labels."""
    n = len(labels)
    tick = tick_font(n)["size"]
    text = {
        name: [_shown(values_shown, float(x)) for x in np.ravel(v)] if values_shown else None
        for name, v in series.items()
    }
    return {
        "kind": "bars",
        "title": title,
        "height": int(height),
        "x": [str(t) for t in labels],
        "x_title": x_title,
        "y_title": y_title,
        "x_angle": tick_angle([str(t) for t in labels], width_px),
        "x_every": label_step(n, width_px, tick * (2 if n > 20 else 1)),
        "series": [{"name": k, "z": encoded(np.ravel(v)), "text": text[k]} for k, v in series.items()],
        "legend": len(series) > 1,
        "colors": colors or SERIES_COLORS,
        "y_range": list(y_range) if y_range is not None else None,
        "text_angle": -90 if values_turned else 0,
        "digits": digits,
        "tick_px": tick,
        "file": file,
    }


def _shown(fmt: str | Callable[[float], str], x: float) -> str:
    return fmt(x) if callable(fmt) else fmt.format(x)
