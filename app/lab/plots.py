"""Plotly figures shared by the pages: one head large, all heads as small multiples.

Heatmaps label rows with query tokens and columns with key tokens, show exact weights on
hover, and use one colour scale for every head of a grid.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

COLORSCALE = "Blues"
FUTURE_COLOR = "rgba(220, 38, 38, 0.9)"  # red outline: weight where the causal mask would forbid it
PNG_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def _unique(labels: list[str]) -> list[str]:
    """Plotly merges equal category labels; make each position's label distinct."""
    return [f"{i}:{t}" for i, t in enumerate(labels)]


def head_heatmap(
    weights: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str],
    title: str = "",
    *,
    zmax: float = 1.0,
    highlight: np.ndarray | None = None,
    value_name: str = "weight",
    colorscale: str = COLORSCALE,
    zmin: float = 0.0,
    height: int = 460,
) -> go.Figure:
    """One (Tq, Tk) matrix; cells where highlight is True get a red outline."""
    ys, xs = _unique(query_tokens), _unique(key_tokens)
    fig = go.Figure(
        go.Heatmap(
            z=weights, x=xs, y=ys, zmin=zmin, zmax=zmax, colorscale=colorscale,
            hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
            colorbar={"title": value_name},
        )
    )
    if highlight is not None:
        qi, ki = np.nonzero(highlight)
        fig.add_trace(
            go.Scatter(
                x=[xs[k] for k in ki], y=[ys[q] for q in qi], mode="markers", hoverinfo="skip",
                marker={"symbol": "square-open", "size": 14, "color": FUTURE_COLOR, "line": {"width": 2}},
                name="future position", showlegend=True,
            )
        )
    fig.update_yaxes(autorange="reversed", title="query", tickmode="array", tickvals=ys,
                     ticktext=query_tokens)
    fig.update_xaxes(title="key", tickmode="array", tickvals=xs, ticktext=key_tokens, side="top")
    fig.update_layout(title=title, height=height, margin={"l": 10, "r": 10, "t": 70, "b": 10},
                      legend={"orientation": "h", "y": -0.05})
    return fig


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
) -> go.Figure:
    """Small multiples of (L, H, Tq, Tk): row = layer, column = head, one colour scale.

    Each heatmap's customdata holds (layer, head), so a click tells which head it was.
    """
    L, H = attention.shape[:2]
    titles = [
        (cell_titles[layer][head] if cell_titles else f"L{layer} H{head}")
        for layer in range(L) for head in range(H)
    ]
    fig = make_subplots(rows=L, cols=H, subplot_titles=titles, horizontal_spacing=0.02,
                        vertical_spacing=0.06 if L > 1 else 0.0)
    ys, xs = _unique(query_tokens), _unique(key_tokens)
    for layer in range(L):
        for head in range(H):
            fig.add_trace(
                go.Heatmap(
                    z=attention[layer, head], x=xs, y=ys, coloraxis="coloraxis",
                    customdata=np.full(attention.shape[2:] + (2,), (layer, head)),
                    hovertemplate=(f"layer {layer} head {head}<br>query %{{y}}<br>key %{{x}}"
                                   "<br>weight %{z:.4f}<extra></extra>"),
                ),
                row=layer + 1, col=head + 1,
            )
    fig.update_xaxes(showticklabels=False)
    fig.update_yaxes(showticklabels=False, autorange="reversed")
    if selected is not None:
        layer, head = selected
        if layer < L and head < H:
            idx = layer * H + head + 1
            xref = "x domain" if idx == 1 else f"x{idx} domain"
            yref = "y domain" if idx == 1 else f"y{idx} domain"
            fig.add_shape(type="rect", xref=xref, yref=yref, x0=-0.02, x1=1.02, y0=-0.02, y1=1.02,
                          line={"color": "#dc2626", "width": 3})
    fig.update_layout(
        title=title, height=max(260, cell_px * L + 80), coloraxis={"colorscale": COLORSCALE, "cmin": 0, "cmax": zmax},
        margin={"l": 10, "r": 10, "t": 80, "b": 10},
    )
    return fig


def selected_head(event: object) -> tuple[int, int] | None:
    """(layer, head) from a st.plotly_chart selection event on an attention grid."""
    try:
        points = event.selection["points"]  # type: ignore[attr-defined]
    except (AttributeError, KeyError, TypeError):
        return None
    for point in points:
        data = point.get("customdata")
        if isinstance(data, (list, tuple)) and len(data) == 2:
            return int(data[0]), int(data[1])
    return None
