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
PICKS_PER_AXIS = 12  # clickable points per subplot axis in a grid (see attention_grid)


def _unique(labels: list[str]) -> list[str]:
    """Plotly merges equal category labels; make each position's label distinct."""
    return [f"{i}:{t}" for i, t in enumerate(labels)]


def _tick_font(n: int) -> dict:
    return {"size": 13 if n <= 20 else 11 if n <= 40 else 8}


def _tick_angle(labels: list[str], width_px: float = 330.0) -> int:
    """Upright labels while they fit; turn them when multi-character labels would collide."""
    longest = max((len(t) for t in labels), default=1)
    return 0 if longest <= 1 or 7 * longest <= width_px / max(len(labels), 1) else -90


def head_heatmap(
    weights: np.ndarray,
    query_tokens: list[str],
    key_tokens: list[str],
    title: str = "",
    *,
    zmax: float = 1.0,
    highlight: np.ndarray | None = None,
    highlight_name: str = "future position",
    value_name: str = "weight",
    colorscale: str = COLORSCALE,
    zmin: float = 0.0,
    height: int = 460,
) -> go.Figure:
    """One (Tq, Tk) matrix; cells where highlight is True get a red outline."""
    ys, xs = _unique(query_tokens), _unique(key_tokens)
    fig = go.Figure(
        go.Heatmap(
            z=np.asarray(weights, dtype=np.float32), x=xs, y=ys, zmin=zmin, zmax=zmax,
            colorscale=colorscale,
            hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
            colorbar={"title": value_name},
        )
    )
    if highlight is not None and highlight.any():
        qi, ki = np.nonzero(highlight)
        size = 14 if max(len(xs), len(ys)) <= 20 else 9 if max(len(xs), len(ys)) <= 40 else 5
        fig.add_trace(
            go.Scatter(
                x=[xs[k] for k in ki], y=[ys[q] for q in qi], mode="markers", hoverinfo="skip",
                marker={"symbol": "square-open", "size": size, "color": FUTURE_COLOR, "line": {"width": 2}},
                name=highlight_name, showlegend=True,
            )
        )
    fig.update_yaxes(autorange="reversed", title="query", tickmode="array", tickvals=ys,
                     ticktext=query_tokens, tickfont=_tick_font(len(ys)))
    angle = _tick_angle(key_tokens)
    fig.update_xaxes(title="key", tickmode="array", tickvals=xs, ticktext=key_tokens, side="top",
                     tickfont=_tick_font(len(xs)), tickangle=angle)
    top = 110 if angle else 95
    fig.update_layout(title={"text": title, "y": 0.99, "yref": "container", "yanchor": "top"},
                      height=height, margin={"l": 10, "r": 10, "t": top, "b": 10},
                      legend={"orientation": "h", "y": -0.02})
    return fig


def _picks(n: int) -> np.ndarray:
    """Up to PICKS_PER_AXIS evenly spread positions in range(n)."""
    return np.unique(np.linspace(0, n - 1, min(n, PICKS_PER_AXIS)).round().astype(int))


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
    clickable: bool = False,
) -> go.Figure:
    """Small multiples of (L, H, Tq, Tk): row = layer, column = head, one colour scale.

    clickable: heatmaps cannot be selected in plotly, so each subplot then also carries an
    invisible scatter of up to 12 x 12 points (hover shows that cell's weight) whose
    customdata is (layer, head); with st.plotly_chart(on_select=..., selection_mode="points")
    a click selects one of them and `selected_head` reads which head it was.
    """
    L, H, Tq, Tk = attention.shape
    titles = [
        (cell_titles[layer][head] if cell_titles else f"L{layer} H{head}")
        for layer in range(L) for head in range(H)
    ]
    height = max(200, cell_px * L + (80 if title else 40))
    gap = min(0.15, 30 / height) if L > 1 else 0.0  # room for each row's subplot titles
    fig = make_subplots(rows=L, cols=H, subplot_titles=titles, horizontal_spacing=0.025,
                        vertical_spacing=gap)
    ys, xs = _unique(query_tokens), _unique(key_tokens)
    rows, cols = np.meshgrid(_picks(Tq), _picks(Tk), indexing="ij")
    rows, cols = rows.ravel(), cols.ravel()
    marker_px = max(8, int(cell_px / max(len(_picks(Tq)), len(_picks(Tk))) * 1.2))
    data = np.asarray(attention, dtype=np.float32)
    for layer in range(L):
        for head in range(H):
            fig.add_trace(
                go.Heatmap(
                    z=data[layer, head], x=xs, y=ys, coloraxis="coloraxis",
                    hovertemplate=(f"layer {layer} head {head}<br>query %{{y}}<br>key %{{x}}"
                                   "<br>weight %{z:.4f}<extra></extra>"),
                ),
                row=layer + 1, col=head + 1,
            )
            if not clickable:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[xs[c] for c in cols], y=[ys[r] for r in rows], mode="markers",
                    marker={"size": marker_px, "color": "rgba(0,0,0,0)", "opacity": 0},
                    customdata=[[layer, head]] * len(rows),
                    text=[f"{data[layer, head, r, c]:.4f}" for r, c in zip(rows, cols, strict=True)],
                    hovertemplate=(f"<b>layer {layer} head {head}</b> (click to open)<br>query %{{y}}"
                                   "<br>key %{x}<br>weight %{text}<extra></extra>"),
                    showlegend=False,
                ),
                row=layer + 1, col=head + 1,
            )
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed")
    if selected is not None:
        layer, head = selected
        if layer < L and head < H:
            idx = layer * H + head + 1
            xref = "x domain" if idx == 1 else f"x{idx} domain"
            yref = "y domain" if idx == 1 else f"y{idx} domain"
            fig.add_shape(type="rect", xref=xref, yref=yref, x0=-0.03, x1=1.03, y0=-0.03, y1=1.03,
                          line={"color": "#dc2626", "width": 3})
    fig.update_annotations(font={"size": 12})
    fig.update_layout(
        title=title, height=height,
        coloraxis={"colorscale": COLORSCALE, "cmin": 0, "cmax": zmax, "showscale": colorbar,
                   "colorbar": {"title": "weight", "thickness": 12}},
        margin={"l": 5, "r": 5, "t": 80 if title else 30, "b": 5},
        hovermode="closest",
    )
    if clickable:
        fig.update_layout(clickmode="event+select")
    return fig


def selected_head(event: object) -> tuple[int, int] | None:
    """(layer, head) from a st.plotly_chart selection event on an attention grid."""
    try:
        points = event.selection["points"]  # type: ignore[attr-defined]
    except (AttributeError, KeyError, TypeError):
        return None
    for point in points or []:
        data = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(data, (list, tuple)) and len(data) >= 2:
            try:
                return int(data[0]), int(data[1])
            except (TypeError, ValueError):
                continue
    return None


def vector_bars(vectors: dict[str, np.ndarray], title: str = "", *, height: int = 260,
                x_title: str = "dimension") -> go.Figure:
    """Grouped bars of one or more equal-length vectors (e.g. q before and after RoPE)."""
    fig = go.Figure()
    for name, vec in vectors.items():
        vec = np.asarray(vec, dtype=np.float32)
        fig.add_trace(go.Bar(x=list(range(len(vec))), y=vec, name=name,
                             hovertemplate=f"{name}[%{{x}}] = %{{y:.4f}}<extra></extra>"))
    fig.update_layout(title=title, height=height, barmode="group", margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      legend={"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
                      xaxis_title=x_title)
    return fig


def token_bars(labels: list[str], values: dict[str, np.ndarray], title: str = "", *,
               height: int = 280, y_title: str = "probability") -> go.Figure:
    """Bars over tokens (keys or vocabulary entries), one series per entry of `values`."""
    fig = go.Figure()
    xs = _unique(labels)
    for name, vals in values.items():
        fig.add_trace(go.Bar(x=xs, y=np.asarray(vals, dtype=np.float32), name=name,
                             hovertemplate=f"{name}<br>%{{x}}: %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=labels, tickfont=_tick_font(len(xs)), tickangle=0)
    fig.update_layout(title=title, height=height, barmode="group", yaxis_title=y_title,
                      margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      legend={"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"},
                      showlegend=len(values) > 1)
    return fig


def matrix_heatmap(matrix: np.ndarray, row_labels: list[str], title: str = "", *,
                   height: int = 300, value_name: str = "value") -> go.Figure:
    """A (rows, dims) matrix of vectors (e.g. every key vector of one head), diverging colours."""
    m = np.asarray(matrix, dtype=np.float32)
    bound = float(np.abs(m).max()) or 1.0
    ys = _unique(row_labels)
    fig = go.Figure(go.Heatmap(
        z=m, y=ys, x=list(range(m.shape[1])), zmin=-bound, zmax=bound, colorscale="RdBu", reversescale=True,
        hovertemplate=f"%{{y}}<br>dimension %{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
        colorbar={"title": value_name, "thickness": 12},
    ))
    fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=ys, ticktext=row_labels,
                     tickfont=_tick_font(len(ys)))
    fig.update_layout(title=title, height=height, xaxis_title="dimension",
                      margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig
