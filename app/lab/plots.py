"""Plotly figures shared by the pages: one head large, all heads as small multiples.

Heatmaps label rows with query tokens and columns with key tokens, show exact weights on
hover, and use one colour scale for every head of a grid.
"""

from __future__ import annotations

import numpy as np
import plotly.colors
import plotly.graph_objects as go

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
    """Upright labels while neighbours fit side by side (about 7 px a character); turned
    when multi-character ones such as <pad><pad> would run into each other."""
    if all(len(t) <= 1 for t in labels):
        return 0  # turning single characters gains nothing
    slot = width_px / max(len(labels), 1)
    widest_pair = max((len(a) + len(b) for a, b in zip(labels, labels[1:], strict=False)), default=0)
    return 0 if widest_pair * 3.5 <= slot else -90


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

    The figure is assembled as plain data and built without plotly's per-property
    validation (the slow part of make_subplots/add_trace for 16 heads of 64 x 64).
    """
    L, H, Tq, Tk = attention.shape
    height = max(200, cell_px * L + (80 if title else 55))
    hgap = 0.025
    vgap = min(0.15, 30 / height) if L > 1 else 0.0  # room for each row's subplot titles
    width, tall = (1 - hgap * (H - 1)) / H, (1 - vgap * (L - 1)) / L
    ys, xs = _unique(query_tokens), _unique(key_tokens)
    rows, cols = np.meshgrid(_picks(Tq), _picks(Tk), indexing="ij")
    rows, cols = rows.ravel(), cols.ravel()
    pick_x, pick_y = [xs[c] for c in cols], [ys[r] for r in rows]
    marker_px = max(8, int(cell_px / max(len(_picks(Tq)), len(_picks(Tk))) * 1.2))
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
            layout[f"xaxis{suffix}"] = {"domain": xdom, "anchor": f"y{suffix}",
                                        "showticklabels": False, "showgrid": False, "zeroline": False,
                                        "ticks": ""}
            layout[f"yaxis{suffix}"] = {"domain": ydom, "anchor": f"x{suffix}",
                                        "autorange": "reversed", "showticklabels": False, "showgrid": False,
                                        "zeroline": False, "ticks": ""}
            text = cell_titles[layer][head] if cell_titles else f"L{layer} H{head}"
            layout["annotations"].append({
                "text": text, "x": x0 + width / 2, "y": top, "xref": "paper", "yref": "paper",
                "xanchor": "center", "yanchor": "bottom", "showarrow": False, "font": {"size": 12},
            })
            traces.append({
                "type": "heatmap", "z": data[layer, head], "x": xs, "y": ys, "coloraxis": "coloraxis", **axes,
                "hovertemplate": (f"layer {layer} head {head}<br>query %{{y}}<br>key %{{x}}"
                                  "<br>weight %{z:.4f}<extra></extra>"),
            })
            if clickable:
                traces.append({
                    "type": "scatter", "x": pick_x, "y": pick_y, "mode": "markers", **axes,
                    "marker": {"size": marker_px, "color": "rgba(0,0,0,0)", "opacity": 0},
                    "customdata": [[layer, head]] * len(rows),
                    "text": [f"{v:.4f}" for v in data[layer, head][rows, cols]],
                    "hovertemplate": (f"<b>layer {layer} head {head}</b> (click to open)<br>query %{{y}}"
                                      "<br>key %{x}<br>weight %{text}<extra></extra>"),
                    "showlegend": False,
                })
    if selected is not None:
        layer, head = selected
        if layer < L and head < H:
            suffix = "" if layer * H + head == 0 else str(layer * H + head + 1)
            layout["shapes"].append({
                "type": "rect", "xref": f"x{suffix} domain", "yref": f"y{suffix} domain",
                "x0": -0.03, "x1": 1.03, "y0": -0.03, "y1": 1.03, "line": {"color": "#dc2626", "width": 3},
            })
    layout.update(
        title={"text": title}, height=height, hovermode="closest",
        coloraxis={"colorscale": plotly.colors.get_colorscale(COLORSCALE), "cmin": 0, "cmax": zmax,
                   "showscale": colorbar, "colorbar": {"title": {"text": "weight"}, "thickness": 12}},
        margin={"l": 5, "r": 5, "t": 80 if title else 45, "b": 5},  # 45: the modebar clears the titles
    )
    if clickable:
        layout["clickmode"] = "event+select"
    return go.Figure(data=traces, layout=layout, _validate=False)


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
    fig.update_layout(title=title, height=height, barmode="group", xaxis_title=x_title,
                      margin={"l": 10, "r": 10, "t": 50, "b": 10},
                      legend={"orientation": "h", "y": 1.12, "x": 1, "xanchor": "right"})
    return fig


def token_bars(labels: list[str], values: dict[str, np.ndarray], title: str = "", *,
               height: int = 280, y_title: str = "probability") -> go.Figure:
    """Bars over tokens (keys or vocabulary entries), one series per entry of `values`."""
    fig = go.Figure()
    xs = _unique(labels)
    for name, vals in values.items():
        fig.add_trace(go.Bar(x=xs, y=np.asarray(vals, dtype=np.float32), name=name,
                             hovertemplate=f"{name}<br>%{{x}}: %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(tickmode="array", tickvals=xs, ticktext=labels, tickfont=_tick_font(len(xs)),
                     tickangle=0)
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
                     tickfont={"size": 12 if len(ys) <= 12 else 9 if len(ys) <= 24 else 7})
    fig.update_layout(title=title, height=height, xaxis_title="dimension",
                      margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return fig
