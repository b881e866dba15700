"""Plotly figures of the lesson pages (/basics, /positions, /variance, /train, /heads):
one head large, all heads as small multiples. The explorers (/gpt, /reversal, /compare)
draw on a canvas instead (lab.charts): plotly.js costs seconds to load.

Heatmaps label rows with query tokens and columns with key tokens, show weights on hover,
and use one colour scale for every head of a grid (`attention_grid`).

Every builder writes the figure as the plain JSON dict plotly.js reads, arrays as typed
arrays (base64), and returns it as a `ReadyFigure`: building plotly's objects validates
every property (50-70 ms for a 4 x 4 grid of 64 x 64 maps, more than the model's forward
pass) and st.plotly_chart then deep-copies them again; a ready dict costs neither.
"""

from __future__ import annotations

import base64
import functools
from typing import Any

import numpy as np
import plotly.colors
import plotly.graph_objects as go
import plotly.io as pio

COLORSCALE = "Blues"
# The chart toolbar keeps only the camera (PNG download): zoom and pan buttons covered titles
PNG_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2},
    "modeBarButtonsToRemove": [
        "zoom2d",
        "pan2d",
        "select2d",
        "lasso2d",
        "zoomIn2d",
        "zoomOut2d",
        "autoScale2d",
        "resetScale2d",
    ],
}


class ReadyFigure(go.Figure):
    """A figure held as its finished JSON dict {"data": [...], "layout": {...}}.

    to_dict() returns that dict itself (st.plotly_chart only serialises it), so nothing is
    validated or copied per run. The dict is shared: treat the figure as read-only. It
    carries the part of the default template (Streamlit's, which plotly's objects would
    copy into every figure, 3.7 kB) these figures use: the colour cycle of the bars.
    """

    def __init__(self, spec: dict[str, Any] | None = None, **_: Any) -> None:
        super().__init__(layout={"template": {}}, _validate=False)  # 0.2 ms; validated: 1.1 ms
        spec = spec or {}
        layout = dict(spec.get("layout") or {})
        layout.setdefault("template", _template(str(pio.templates.default)))
        data = [dict(t) for t in spec.get("data") or []]
        # plotly's own methods (e.g. BaseFigure.to_dict on a copy) read these
        self._data, self._layout = data, layout
        self.__dict__["_spec"] = {"data": data, "layout": layout}

    def to_dict(self) -> dict[str, Any]:
        return self.__dict__["_spec"]

    def to_plotly_json(self) -> dict[str, Any]:
        return self.to_dict()

    def __reduce__(self) -> tuple[type, tuple[dict[str, Any]]]:  # pickling (st.cache_data) keeps the dict
        return (ReadyFigure, (self.to_dict(),))


@functools.cache
def _template(name: str) -> dict[str, Any]:
    """The colour cycle of a plotly template (Streamlit's holds placeholders its frontend
    swaps for the theme's chart colours); the rest of it styles trace types not used here."""
    colorway = pio.templates[name].layout.colorway if name in pio.templates else None
    return {"layout": {"colorway": list(colorway)}} if colorway else {}


@functools.cache
def colorscale_steps(name: str) -> list[list[Any]]:
    return [list(step) for step in plotly.colors.get_colorscale(name)]


def typed(values: np.ndarray, dtype: str = "f4") -> dict[str, str]:
    """A numpy array as a plotly.js typed array ({"dtype", "bdata", "shape"}): a quarter to
    a tenth of the bytes of a JSON list, decoded by the browser without parsing."""
    arr = np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<"))
    out = {"dtype": dtype, "bdata": base64.b64encode(arr.tobytes()).decode("ascii")}
    if arr.ndim > 1:
        out["shape"] = ", ".join(str(n) for n in arr.shape)
    return out


def _unique(labels: list[str]) -> list[str]:
    """Plotly merges equal category labels; make each position's label distinct."""
    return [f"{i}:{t}" for i, t in enumerate(labels)]


# ---------------------------------------------------------------- attention maps

GRID_STEPS = 10_000  # grid weights travel as whole percent + hundredths of a percent: 1e-4 steps


def grid_encoding(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights in [0, 1] as (whole percent, hundredths of a percent), both uint8.

    Why: two bytes a cell instead of four, the colour follows the percent (101 shades, more
    than a small map shows) and the hover still reads exactly, e.g. "12.34%".
    """
    clipped = np.clip(np.asarray(weights, dtype=np.float64), 0.0, 1.0)
    steps = np.rint(clipped * GRID_STEPS).astype(np.int64)
    return (steps // 100).astype(np.uint8), (steps % 100).astype(np.uint8)


def _attention_trace(
    weights: np.ndarray, xs: list[str], ys: list[str], *, hover_prefix: str = ""
) -> dict[str, Any]:
    """One (Tq, Tk) attention map of a grid as a heatmap trace: the two-byte encoding (see
    grid_encoding) on a 0-100 scale, the hover reading e.g. "12.34%"."""
    percent, hundredths = grid_encoding(weights)
    return {
        "type": "heatmap",
        "z": typed(percent, "u1"),
        "customdata": typed(hundredths, "u1"),
        "x": xs,
        "y": ys,
        "hovertemplate": (
            f"{hover_prefix}query %{{y}}<br>key %{{x}}<br>weight %{{z}}.%{{customdata:02d}}%<extra></extra>"
        ),
    }


_TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)  # colour bar of a grid: weights, though its scale runs in percent


def attention_grid(
    attention: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str],
    *,
    title: str = "",
    cell_titles: list[list[str]] | None = None,
    selected: tuple[int, int] | None = None,
    zmax: float = 1.0,
    cell_px: int = 170,
    colorbar: bool = True,
) -> ReadyFigure:
    """Small multiples of (L, H, Tq, Tk) weights in [0, 1]: row = layer, column = head, one
    colour scale (a shared colour axis); hover shows each cell's weight as a percentage
    with two decimals (the grid travels in 1e-4 steps, see grid_encoding). The explorers'
    clickable grids are lab.charts' canvas grids; this one serves the lesson pages.
    """
    L, H, Tq, Tk = attention.shape
    height = max(200, cell_px * L + (75 if title else 55))
    hgap = 0.025
    vgap = min(0.15, 30 / height) if L > 1 else 0.0  # room for each row's subplot titles
    width, tall = (1 - hgap * (H - 1)) / H, (1 - vgap * (L - 1)) / L
    ys, xs = _unique(query_tokens), _unique(key_tokens)
    data = np.asarray(attention, dtype=np.float32)
    traces: list[dict] = []
    layout: dict = {"annotations": [], "shapes": []}
    for layer in range(L):
        for head in range(H):
            idx = layer * H + head + 1
            suffix = "" if idx == 1 else str(idx)
            x0 = head * (width + hgap)
            top = 1 - layer * (tall + vgap)
            xdom = [round(max(0.0, x0), 6), round(min(1.0, x0 + width), 6)]  # plotly rejects 1.0000001
            ydom = [round(max(0.0, top - tall), 6), round(min(1.0, top), 6)]
            axes = {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
            # hidden, fixed axes with set ranges: plotly then draws no ticks and no zoom handles
            # (a third of the grid's drawing time in the browser); hover works as before
            layout[f"xaxis{suffix}"] = {
                "domain": xdom,
                "anchor": f"y{suffix}",
                "visible": False,
                "fixedrange": True,
                "range": [-0.5, Tk - 0.5],
            }
            layout[f"yaxis{suffix}"] = {
                "domain": ydom,
                "anchor": f"x{suffix}",
                "visible": False,
                "fixedrange": True,
                "range": [Tq - 0.5, -0.5],
            }  # row 0 on top
            text = cell_titles[layer][head] if cell_titles else f"L{layer} H{head}"
            layout["annotations"].append(
                {
                    "text": text,
                    "x": x0 + width / 2,
                    "y": top,
                    "xref": "paper",
                    "yref": "paper",
                    "xanchor": "center",
                    "yanchor": "bottom",
                    "showarrow": False,
                    "font": {"size": 12},
                }
            )
            traces.append(
                {
                    **_attention_trace(
                        data[layer, head], xs, ys, hover_prefix=f"layer {layer} head {head}<br>"
                    ),
                    "coloraxis": "coloraxis",
                    **axes,
                }
            )
    if selected is not None:
        layer, head = selected
        if layer < L and head < H:
            suffix = "" if layer * H + head == 0 else str(layer * H + head + 1)
            layout["shapes"].append(
                {
                    "type": "rect",
                    "xref": f"x{suffix} domain",
                    "yref": f"y{suffix} domain",
                    "x0": -0.03,
                    "x1": 1.03,
                    "y0": -0.03,
                    "y1": 1.03,
                    "line": {"color": "#dc2626", "width": 3},
                }
            )
    layout.update(
        # small, at the top left: above the cell titles, clear of the toolbar (top right), and
        # on the PNG the camera saves
        title={
            "text": title,
            "x": 0,
            "xanchor": "left",
            "y": 1,
            "yanchor": "top",
            "yref": "container",
            "pad": {"t": 4},
            "font": {"size": 14},
        },
        height=height,
        hovermode="closest",
        coloraxis={
            "colorscale": colorscale_steps(COLORSCALE),
            "cmin": 0,
            "cmax": 100 * zmax,
            "showscale": colorbar,
            "colorbar": {
                "title": {"text": "weight"},
                "thickness": 12,
                "tickmode": "array",
                "tickvals": [100 * zmax * f for f in _TICKS],
                "ticktext": [f"{zmax * f:g}" for f in _TICKS],
            },
        },
        margin={"l": 5, "r": 5, "t": 65 if title else 45, "b": 5},  # 45: the modebar clears the cell titles
    )
    return ReadyFigure({"data": traces, "layout": layout})


def heatmap_values(trace: dict[str, Any]) -> np.ndarray:
    """The weights a heatmap trace of this module carries (float32 or the grid's encoding),
    from its JSON (what the browser receives): (Tq, Tk)."""

    def decode(spec: Any) -> np.ndarray:
        if isinstance(spec, dict) and "bdata" in spec:
            dtype = np.dtype(spec["dtype"]).newbyteorder("<")
            arr = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=dtype)
            shape = [int(n) for n in str(spec.get("shape", len(arr))).split(",")]
            return arr.reshape(shape)
        return np.asarray(spec, dtype=np.float64)

    z = decode(trace["z"])
    if z.dtype == np.uint8 and "customdata" in trace:
        return (z.astype(np.float64) * 100 + decode(trace["customdata"])) / GRID_STEPS
    return z.astype(np.float64)
