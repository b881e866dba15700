"""Plotly figures for the lesson pages (/basics, /positions, /variance).

Figures only: every number arrives computed (the `lessons` package). Fonts are large
enough for a projector; colours are shared across pages: scaled/first series indigo,
unscaled/second series orange.

Every builder is cached by its inputs (`figure_cache`): building a plotly figure costs
10-50 ms of CPU, so a rerun that leaves a figure's inputs alone reuses the built one.
Long series are thinned and samples pre-binned before they are sent.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lab import plots
from lab.compute import figure_cache
from lessons.training import Schedules
from lessons.variance import Saturation

#: the explorers' grid of heads, cached like the figures below (fewer: a model's grid can be MBs)
attention_grid = figure_cache(plots.attention_grid, max_entries=16)

FIRST = "#4f46e5"  # scaled, sinusoidal, Gaussian
SECOND = "#ea580c"  # unscaled, learned, boxcar
THIRD = "#059669"
MUTED = "#6b7280"
FONT = {"size": 15}
MARGIN = {"l": 10, "r": 10, "t": 60, "b": 10}


def _finish(fig: go.Figure, title: str, height: int, **layout: object) -> go.Figure:
    fig.update_layout(**{"title": title, "height": height, "font": FONT, "margin": MARGIN, **layout})
    return fig


@figure_cache
def value_heatmap(
    z: np.ndarray,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    title: str = "",
    *,
    x_title: str = "key",
    y_title: str = "query",
    value_name: str = "weight",
    colorscale: str = "Blues",
    zmin: float | None = 0.0,
    zmax: float | None = 1.0,
    marks: np.ndarray | None = None,
    mark_name: str = "padding",
    show_values: bool = True,
    digits: int = 4,
    height: int = 340,
) -> go.Figure:
    """A small labelled matrix with its values written in the cells (rows top to bottom).

    marks (same shape, bool): cells drawn with a grey cross, e.g. padded keys.
    """
    xs = [f"{i}:{t}" for i, t in enumerate(x_labels)]
    ys = [f"{i}:{t}" for i, t in enumerate(y_labels)]
    z = np.asarray(z, dtype=float)
    heat = go.Heatmap(
        z=z,
        x=xs,
        y=ys,
        zmin=zmin,
        zmax=zmax,
        colorscale=colorscale,
        hovertemplate=(
            f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>{value_name} %{{z:.{digits}f}}<extra></extra>"
        ),
        colorbar={"title": value_name},
    )
    if show_values:
        heat.update(texttemplate=f"%{{z:.{digits}f}}", textfont={"size": 14})
    fig = go.Figure(heat)
    if marks is not None:  # dashed outline around each marked cell; an empty trace names it in the legend
        for qi, ki in zip(*np.nonzero(np.asarray(marks)), strict=True):
            fig.add_shape(
                type="rect",
                x0=ki - 0.46,
                x1=ki + 0.46,
                y0=qi - 0.46,
                y1=qi + 0.46,
                line={"color": MUTED, "width": 2, "dash": "dash"},
            )
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=f"dashed: {mark_name}",
                marker={"symbol": "square-open", "size": 14, "color": MUTED},
            )
        )
    fig.update_xaxes(title=x_title, tickmode="array", tickvals=xs, ticktext=list(x_labels))
    fig.update_yaxes(
        title=y_title, tickmode="array", tickvals=ys, ticktext=list(y_labels), autorange="reversed"
    )
    return _finish(
        fig,
        title,
        height,
        showlegend=marks is not None,
        legend={"orientation": "h", "y": 1.02, "x": 1, "xanchor": "right", "yanchor": "bottom"},
    )


@figure_cache
def retrieval_figure(
    tokens: Sequence[str], values: np.ndarray, weights: np.ndarray, context: np.ndarray
) -> go.Figure:
    """Left: the weight of each key. Right: values as 2-D points sized by weight, and the
    context vector (their weighted average) as a star."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("weight per key", "values and context"),
        horizontal_spacing=0.18,
    )
    fig.add_trace(
        go.Bar(
            x=list(tokens),
            y=weights,
            marker_color=FIRST,
            text=[f"{w:.4f}" for w in weights],
            textposition="outside",
            name="weight",
            showlegend=False,
            hovertemplate="%{x}: %{y:.4f}<extra></extra>",
        ),
        row=1,
        col=1,
    )
    v = np.asarray(values)
    fig.add_trace(
        go.Scatter(
            x=v[:, 0],
            y=v[:, 1],
            mode="markers+text",
            text=list(tokens),
            textposition="top center",
            marker={"size": 12 + 50 * np.asarray(weights), "color": FIRST, "opacity": 0.45},
            name="values",
            hovertemplate="%{text}: (%{x}, %{y})<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fig.add_trace(
        go.Scatter(
            x=[context[0]],
            y=[context[1]],
            mode="markers+text",
            text=["context"],
            textposition="middle right",
            marker={"symbol": "star", "size": 22, "color": SECOND},
            name="context",
            hovertemplate="context (%{x:.4f}, %{y:.4f})<extra></extra>",
        ),
        row=1,
        col=2,
    )
    fig.update_yaxes(range=[0, 1.15], title="weight", row=1, col=1)
    fig.update_xaxes(range=[-0.3, 1.3], title="value[0]", row=1, col=2)
    fig.update_yaxes(range=[-0.3, 1.35], title="value[1]", row=1, col=2)
    return _finish(fig, "", 380, showlegend=False)


@figure_cache
def kernel_figure(
    locations: Sequence[float],
    prices: Sequence[float],
    query: float,
    weights: dict[str, np.ndarray],
    grid: np.ndarray,
    curves: dict[str, np.ndarray],
) -> go.Figure:
    """Left: normalised weight per house for each kernel. Right: the houses, and each
    kernel's prediction as a function of the query location."""
    fig = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.42, 0.58],
        horizontal_spacing=0.1,
        subplot_titles=("weight per house", "prediction as the query moves"),
    )
    labels = [f"#{i} at {loc:g}" for i, loc in enumerate(locations)]
    colors = [FIRST, SECOND, THIRD]
    for i, (name, w) in enumerate(weights.items()):
        w = np.nan_to_num(np.asarray(w, dtype=float))
        fig.add_trace(
            go.Bar(
                x=labels,
                y=w,
                name=name,
                marker_color=colors[i % 3],
                hovertemplate=f"{name} %{{x}}: %{{y:.4f}}<extra></extra>",
            ),
            row=1,
            col=1,
        )
    fig.add_trace(
        go.Scatter(
            x=list(locations),
            y=list(prices),
            mode="markers",
            name="houses",
            marker={"size": 12, "color": "#111827"},
            hovertemplate="location %{x}, price %{y}<extra></extra>",
        ),
        row=1,
        col=2,
    )
    for i, (name, pred) in enumerate(curves.items()):
        fig.add_trace(
            go.Scatter(
                x=grid,
                y=pred,
                mode="lines",
                name=f"{name} prediction",
                line={"color": colors[i % 3], "width": 3},
                connectgaps=False,
                hovertemplate=f"{name}: query %{{x:.2f}} -> %{{y:.2f}}<extra></extra>",
            ),
            row=1,
            col=2,
        )
    fig.add_vline(x=query, line={"color": MUTED, "dash": "dash"}, row=1, col=2)
    fig.update_yaxes(title="weight", range=[0, 1.05], row=1, col=1)
    fig.update_xaxes(title="location", row=1, col=2)
    fig.update_yaxes(title="price", row=1, col=2)
    return _finish(fig, "", 400, barmode="group", legend={"orientation": "h", "y": -0.25})


def _density_bars(samples: np.ndarray, x_max: float, bins: int, color: str, name: str) -> go.Bar:
    """A probability-density histogram of samples (n,) over [-x_max, x_max], binned here so
    that bins numbers are sent instead of n samples (plotly's histnorm="probability density")."""
    density, edges = np.histogram(samples, bins=bins, range=(-x_max, x_max), density=True)
    width = edges[1] - edges[0]
    return go.Bar(
        x=edges[:-1] + width / 2,
        y=density,
        width=width,
        marker_color=color,
        name=name,
        hovertemplate=f"score %{{x:.1f}} ± {width / 2:g}<br>density %{{y:.4f}}<extra></extra>",
    )


@figure_cache
def score_histograms(raw: np.ndarray, scaled: np.ndarray, d_k: int, x_min_range: float = 50.0) -> go.Figure:
    """Histograms of q.k and of q.k / sqrt(d_k) (n,) on one shared x range: +-x_min_range
    (fixed while the samples fit, so growth shows), widened in steps of 10 to hold every sample.
    The scaled one gets finer bins (0.25 wide), else it would be one spike on that axis."""
    extreme = float(max(np.abs(raw).max(initial=0.0), np.abs(scaled).max(initial=0.0)))
    x_max = max(x_min_range, 10.0 * np.ceil(extreme * 1.02 / 10.0))
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_xaxes=True,
        horizontal_spacing=0.08,
        subplot_titles=(f"q·k   (variance {raw.var():.1f})", f"q·k / √d_k   (variance {scaled.var():.2f})"),
    )
    fig.add_trace(_density_bars(raw, x_max, 100, SECOND, "unscaled"), row=1, col=1)
    # the scaled scores stay near N(0, 1): bins of 0.25 show their bell on the shared axis
    fig.add_trace(_density_bars(scaled, x_max, int(8 * x_max), FIRST, "scaled"), row=1, col=2)
    fig.update_xaxes(range=[-x_max, x_max], title="score")
    fig.update_yaxes(title="density", row=1, col=1)
    return _finish(fig, f"d_k = {d_k}: {raw.size} random (q, k) pairs", 360, showlegend=False, bargap=0.02)


@figure_cache
def saturation_figure(sat: Saturation, d_k: int, n_keys: int) -> go.Figure:
    """Entropy, max weight and softmax gradient norm against d_k (log axis), both ways."""
    fig = make_subplots(
        rows=1,
        cols=3,
        horizontal_spacing=0.07,
        subplot_titles=("entropy of the row (nats)", "largest weight", "gradient norm ‖∂softmax/∂s‖"),
    )
    dims = sat.dims
    series = (("entropy", 1), ("max", 2), ("grad", 3))
    for name, col in series:
        for tag, label, color in (("scaled", "scaled by 1/√d_k", FIRST), ("raw", "unscaled", SECOND)):
            fig.add_trace(
                go.Scatter(
                    x=dims,
                    y=getattr(sat, f"{name}_{tag}"),
                    mode="lines+markers",
                    name=label,
                    line={"color": color, "width": 3},
                    legendgroup=tag,
                    showlegend=col == 1,
                    hovertemplate=f"{label}<br>d_k %{{x}}: %{{y:.3f}}<extra></extra>",
                ),
                row=1,
                col=col,
            )
        fig.add_vline(x=d_k, line={"color": MUTED, "dash": "dash"}, row=1, col=col)
    fig.update_xaxes(type="log", title="d_k", dtick=np.log10(4))
    fig.update_yaxes(range=[0, np.log(n_keys) * 1.05], row=1, col=1)
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    fig.update_yaxes(rangemode="tozero", row=1, col=3)
    return _finish(fig, "", 360, legend={"orientation": "h", "y": -0.22})


@figure_cache
def row_bars(raw_weights: np.ndarray, scaled_weights: np.ndarray, d_k: int) -> go.Figure:
    """One row of attention weights at d_k, unscaled next to scaled."""
    keys = [f"k{i}" for i in range(len(raw_weights))]
    fig = go.Figure(
        [
            go.Bar(x=keys, y=scaled_weights, name="scaled by 1/√d_k", marker_color=FIRST),
            go.Bar(x=keys, y=raw_weights, name="unscaled", marker_color=SECOND),
        ]
    )
    fig.update_yaxes(range=[0, 1.02], title="weight")
    return _finish(
        fig,
        f"one query against {len(keys)} keys, d_k = {d_k}",
        320,
        barmode="group",
        legend={"orientation": "h", "y": 1.12},
    )


@figure_cache
def pe_heatmap(table: np.ndarray, title: str, *, seen: int | None = None, zabs: float = 1.0) -> go.Figure:
    """A position table (P, d) drawn with position across and dimension down."""
    table = np.asarray(table)
    fig = go.Figure(
        go.Heatmap(
            z=table.T.astype(np.float32),  # hover shows 4 decimals: half the bytes of float64
            x=np.arange(table.shape[0]),
            y=np.arange(table.shape[1]),
            colorscale="RdBu",
            zmid=0,
            zmin=-zabs,
            zmax=zabs,
            colorbar={"title": "value"},
            hovertemplate="position %{x}<br>dimension %{y}<br>value %{z:.4f}<extra></extra>",
        )
    )
    if seen is not None and seen < table.shape[0]:
        fig.add_vline(
            x=seen - 0.5,
            line={"color": "#111827", "width": 3, "dash": "dash"},
            annotation_text="never seen in training →",
            annotation_position="top right",
        )
    fig.update_xaxes(title="position")
    fig.update_yaxes(title="dimension", autorange="reversed")
    return _finish(fig, title, 380)


@figure_cache
def waves_figure(table: np.ndarray, dims: Sequence[int]) -> go.Figure:
    """Chosen dimensions of a position table as functions of position."""
    fig = go.Figure()
    for d in dims:
        kind = "sin" if d % 2 == 0 else "cos"
        fig.add_trace(
            go.Scatter(
                x=np.arange(table.shape[0]),
                y=table[:, d],
                mode="lines+markers",
                marker={"size": 4},
                name=f"dim {d} ({kind})",
            )
        )
    fig.update_xaxes(title="position")
    fig.update_yaxes(title="value", range=[-1.1, 1.1])
    return _finish(fig, "chosen dimensions as waves", 340, legend={"orientation": "h", "y": -0.25})


@figure_cache
def similarity_heatmap(matrix: np.ndarray, title: str) -> go.Figure:
    fig = go.Figure(
        go.Heatmap(
            z=np.asarray(matrix, dtype=np.float32),
            colorscale="RdBu",
            zmid=0,
            zmin=-1,
            zmax=1,
            colorbar={"title": "cos"},
            hovertemplate="position %{y} vs %{x}<br>cosine %{z:.4f}<extra></extra>",
        )
    )
    fig.update_xaxes(title="position", scaleanchor="y", constrain="domain")
    fig.update_yaxes(title="position", autorange="reversed", constrain="domain")
    return _finish(fig, title, 420)


@figure_cache
def lines_figure(
    series: dict[str, np.ndarray],
    title: str,
    *,
    x_title: str = "position p",
    y_title: str = "",
    y_range: Sequence[float] | None = None,
    x_start: int = 0,
    marker_x: float | None = None,
    marker_text: str = "",
    height: int = 340,
) -> go.Figure:
    """Several named 1-D curves over positions x_start, x_start + 1, ..."""
    colors = [FIRST, SECOND, THIRD, MUTED]
    fig = go.Figure()
    for i, (name, y) in enumerate(series.items()):
        fig.add_trace(
            go.Scatter(
                x=np.arange(x_start, x_start + len(y)),
                y=y,
                mode="lines",
                name=name,
                line={"color": colors[i % len(colors)], "width": 3},
                hovertemplate=f"{name}<br>%{{x}}: %{{y:.4f}}<extra></extra>",
            )
        )
    if marker_x is not None:
        fig.add_vline(x=marker_x, line={"color": "#111827", "dash": "dash"}, annotation_text=marker_text)
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title, range=y_range)
    return _finish(fig, title, height, legend={"orientation": "h", "y": -0.25})


@figure_cache
def rope_path_figure(path: np.ndarray, positions: Sequence[int], radians_per_step: float) -> go.Figure:
    """Arrows from the origin to a 2-D pair rotated to each position."""
    fig = go.Figure()
    reach = float(np.abs(path).max()) * 1.25 or 1.0
    theta = np.linspace(0, 2 * np.pi, 200)
    radius = float(np.linalg.norm(path[0]))
    fig.add_trace(
        go.Scatter(
            x=radius * np.cos(theta),
            y=radius * np.sin(theta),
            mode="lines",
            line={"color": "#d1d5db", "dash": "dot"},
            hoverinfo="skip",
            showlegend=False,
        )
    )
    for x, y in path:
        fig.add_annotation(
            x=x,
            y=y,
            ax=0,
            ay=0,
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            showarrow=True,
            arrowhead=2,
            arrowwidth=2,
            arrowcolor=FIRST,
            text="",
        )
    fig.add_trace(
        go.Scatter(
            x=path[:, 0],
            y=path[:, 1],
            mode="markers+text",
            text=[f"p={p}" for p in positions],
            textposition="top center",
            marker={"size": 9, "color": FIRST},
            showlegend=False,
            hovertemplate="(%{x:.3f}, %{y:.3f})<extra></extra>",
        )
    )
    fig.update_xaxes(range=[-reach, reach], zeroline=True, title="first coordinate of the pair")
    fig.update_yaxes(range=[-reach, reach], zeroline=True, scaleanchor="x", title="second coordinate")
    return _finish(fig, f"the pair turns {radians_per_step:.4f} rad per position", 440)


@figure_cache
def slopes_figure(slopes: np.ndarray) -> go.Figure:
    heads = [f"head {h}" for h in range(len(slopes))]
    fig = go.Figure(
        go.Bar(
            x=heads,
            y=slopes,
            marker_color=FIRST,
            text=[f"{s:.4g}" for s in slopes],
            textposition="outside",
            textfont={"size": 13},
            textangle=-90,  # a narrow column: upright labels were shrunk to the bar width, unreadable
            constraintext="none",
            cliponaxis=False,
            hovertemplate="%{x}: slope %{y:.5f}<extra></extra>",
        )
    )
    fig.update_yaxes(title="slope m", range=[0, max(float(np.max(slopes)), 1e-9) * 1.6])
    fig.update_xaxes(tickangle=-45, tickfont={"size": 13})
    return _finish(fig, "slope per head", 380)


def _thin(n: int, keep: Sequence[int], points: int = 800) -> np.ndarray:
    """Sorted indices (<= points + len(keep),) spread over 0..n-1 plus the ones in keep:
    a smooth curve of 50,000 steps looks the same drawn through 800 of them."""
    grid = np.linspace(0, n - 1, min(n, points)).round().astype(int)
    extra = np.clip(np.asarray(keep, dtype=int), 0, n - 1)
    return np.unique(np.concatenate([grid, extra]))


@figure_cache
def lr_figure(schedules: Schedules, warmup: int) -> go.Figure:
    """Learning rate against step (n,) for the two schedules, warm-up end marked; drawn
    through at most ~800 steps, always including the peak at the end of warm-up."""
    idx = _thin(len(schedules.steps), [warmup - 2, warmup - 1, warmup])
    steps = schedules.steps[idx]
    curves = [
        ("warm-up, then 1/√step", schedules.vaswani, FIRST),
        ("warm-up, then cosine", schedules.cosine, SECOND),
    ]
    fig = go.Figure(
        [
            go.Scatter(x=steps, y=lr[idx], mode="lines", name=name, line={"color": color, "width": 3})
            for name, lr, color in curves
        ]
    )
    fig.add_vline(
        x=warmup,
        line={"color": MUTED, "dash": "dash"},
        annotation_text="end of warm-up",
        annotation_position="bottom right",
    )
    fig.update_xaxes(title="step")
    fig.update_yaxes(title="learning rate", exponentformat="e")
    return _finish(fig, "", 360, legend={"orientation": "h", "y": 1.12})


@figure_cache
def smoothing_figure(distribution: np.ndarray, target: int) -> go.Figure:
    classes = [f"class {i}" for i in range(len(distribution))]
    one_hot = np.zeros(len(distribution))
    one_hot[target] = 1.0
    fig = go.Figure(
        [
            go.Bar(x=classes, y=one_hot, name="one-hot target", marker_color="#d1d5db"),
            go.Bar(
                x=classes,
                y=distribution,
                name="smoothed target",
                marker_color=FIRST,
                hovertemplate="%{x}: %{y:.4f}<extra></extra>",
            ),
        ]
    )
    fig.update_yaxes(title="probability", range=[0, 1.05])
    return _finish(fig, "", 340, barmode="group", legend={"orientation": "h", "y": 1.12})
