"""Charts of the lesson pages (/basics, /variance; /positions in position_charts) as specs.

Charts only: every number arrives computed (the `lessons` package). Colours are shared across
pages (charts.SERIES_COLORS): scaled/first series blue, unscaled/second series orange. Specs are
built on every run: most cost less to build than their arrays and labels cost to hash as a cache
key; the few that cost more to build are cached in lesson_views by the small inputs they are drawn
from. Long series are thinned and samples binned here, before they are sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from attention_lab.charts import specs as charts
from attention_lab.charts import xy_charts
from attention_lab.lessons.training import Schedules
from attention_lab.lessons.variance import Saturation

CYCLE = charts.SERIES_COLORS
FIRST, SECOND = CYCLE[:2]  # scaled, sinusoidal, Gaussian; unscaled, learned, boxcar
MUTED = charts.MUTED
Spec = dict[str, Any]


def _bounds(z: np.ndarray, colorscale: str, zmin: float | None, zmax: float | None) -> tuple[float, float]:
    """The colour range: as given, else the data's (around 0 for a diverging scale)."""
    finite = z[np.isfinite(z)]
    if finite.size == 0:
        return (zmin if zmin is not None else 0.0, zmax if zmax is not None else 1.0)
    if colorscale.startswith("RdBu") and zmin is None and zmax is None:
        bound = float(np.abs(finite).max()) or 1.0
        return -bound, bound
    lo = float(finite.min()) if zmin is None else zmin
    hi = float(finite.max()) if zmax is None else zmax
    return (lo, hi) if hi > lo else (lo - 1.0, lo + 1.0)


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
    digits: int | None = None,
    height: int = 340,
) -> Spec:
    """A small labelled (rows, cols) matrix with its values written in the cells, with
    `digits` decimals (weights: charts.WEIGHT_DIGITS, as everywhere; other values 4).

    marks (same shape, bool): cells outlined in grey dashes, e.g. padded keys. zmin/zmax
    None: the data's range (around 0 for RdBu)."""
    if digits is None:
        digits = charts.WEIGHT_DIGITS if value_name == "weight" else 4
    z = np.asarray(z, dtype=np.float64)
    lo, hi = _bounds(z, colorscale, zmin, zmax)
    spec = charts.head_spec(
        z,
        list(y_labels),
        list(x_labels),
        title,
        zmin=lo,
        zmax=hi,
        highlight=None if marks is None else np.asarray(marks, dtype=bool),
        highlight_name=f"dashed: {mark_name}",
        dashed=True,
        value_name=value_name,
        colorscale=colorscale,
        height=height,
        cell_digits=digits if show_values else None,
        file=title or "matrix",
    )
    spec.update(x_title=x_title, y_title=y_title, digits=digits)
    return spec


def retrieval_charts(
    tokens: Sequence[str], values: np.ndarray, weights: np.ndarray, context: np.ndarray
) -> tuple[Spec, Spec]:
    """The weight of each key (bars), and the values as 2-D points sized by weight with the
    context vector (their weighted average) as a star."""
    bars = charts.bars_spec(
        list(tokens),
        {"weight": np.asarray(weights)},
        "weight per key",
        height=380,
        y_title="weight",
        colors=[FIRST],
        y_range=(0.0, 1.15),
        values_shown=charts.weight_text,
        digits=charts.WEIGHT_DIGITS,
        file="weight_per_key",
    )
    v = np.asarray(values, dtype=np.float64)
    cloud = xy_charts.xy_spec(
        [
            xy_charts.panel(
                [
                    xy_charts.points(
                        "values",
                        v[:, 0],
                        v[:, 1],
                        color=FIRST,
                        sizes=12 + 50 * np.asarray(weights),
                        labels=list(tokens),
                        opacity=0.75,
                    ),
                    xy_charts.points(
                        "context",
                        [context[0]],
                        [context[1]],
                        color=SECOND,
                        sizes=[22],
                        labels=["context"],
                        star=True,
                    ),
                ],
                x_title="value[0]",
                y_title="value[1]",
                x_range=(-0.3, 1.3),
                y_range=(-0.3, 1.35),
            )
        ],
        title="values and context",
        height=380,
        file="values_and_context",
    )
    return bars, cloud


def kernel_charts(
    locations: Sequence[float],
    prices: Sequence[float],
    query: float,
    weights: dict[str, np.ndarray],
    grid: np.ndarray,
    curves: dict[str, np.ndarray],
) -> tuple[Spec, Spec]:
    """The normalised weight per house for each kernel (grouped bars); the houses, and each
    kernel's prediction as a function of the query location (the query dashed)."""
    bars = charts.bars_spec(
        [f"#{i} at {loc:g}" for i, loc in enumerate(locations)],
        {name: np.nan_to_num(np.asarray(w, dtype=float)) for name, w in weights.items()},
        "weight per house",
        height=400,
        y_title="weight",
        colors=CYCLE,
        y_range=(0.0, 1.05),
        file="weight_per_house",
    )
    lines = [
        xy_charts.line(f"{name} prediction", grid, pred, **xy_charts.look(i))
        for i, (name, pred) in enumerate(curves.items())
    ]
    houses = xy_charts.points(
        "houses", list(locations), list(prices), color="text", sizes=[12] * len(locations)
    )
    curve = xy_charts.xy_spec(
        [
            xy_charts.panel(
                [houses, *lines],
                x_title="location",
                y_title="price",
                vlines=[(query, f"query {query:g}")],
                end_labels=len(lines) > 1,
            )
        ],
        title="prediction as the query moves",
        height=400,
        digits=2,
        file="kernel_prediction",
    )
    return bars, curve


def _density(samples: np.ndarray, x_max: float, bins: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(centres, densities, width) of a probability-density histogram over [-x_max, x_max]:
    bins numbers are sent instead of n samples."""
    density, edges = np.histogram(samples, bins=bins, range=(-x_max, x_max), density=True)
    width = float(edges[1] - edges[0])
    return edges[:-1] + width / 2, density, width


def score_histograms(raw: np.ndarray, scaled: np.ndarray, d_k: int, x_min_range: float = 50.0) -> Spec:
    """Histograms of q.k and of q.k / sqrt(d_k) (n,) on one shared x range: +-x_min_range
    (fixed while the samples fit, so growth shows), widened in steps of 10 to hold every sample.
    The scaled one gets finer bins (0.25 wide), else it would be one spike on that axis."""
    extreme = float(max(np.abs(raw).max(initial=0.0), np.abs(scaled).max(initial=0.0)))
    x_max = max(x_min_range, 10.0 * np.ceil(extreme * 1.02 / 10.0))
    sides = (
        (raw, 100, SECOND, "unscaled", f"q·k   (variance {raw.var():.1f})"),
        (scaled, int(8 * x_max), FIRST, "scaled", f"q·k / √d_k   (variance {scaled.var():.2f})"),
    )
    panels = []
    for samples, bins, color, name, title in sides:
        centres, density, width = _density(samples, x_max, bins)
        panels.append(
            xy_charts.panel(
                [xy_charts.histogram(name, centres, density, width, color=color)],
                title=title,
                x_title="score",
                y_title="density",
                x_range=(-x_max, x_max),
            )
        )
    return xy_charts.xy_spec(
        panels, title=f"d_k = {d_k}: {raw.size} random (q, k) pairs", height=360, file=f"scores_d_k_{d_k}"
    )


def saturation_chart(sat: Saturation, d_k: int, n_keys: int) -> Spec:
    """Entropy, max weight and softmax gradient norm against d_k (log axis), both ways."""
    plots = (
        ("entropy", "entropy of the row (nats)", (0.0, float(np.log(n_keys)) * 1.05)),
        ("max", "largest weight", (0.0, 1.02)),
        ("grad", "gradient norm ‖∂softmax/∂s‖", None),
    )
    ways = (("scaled", "scaled by 1/√d_k", 0), ("raw", "unscaled", 1))
    return xy_charts.xy_spec(
        [
            xy_charts.panel(
                [
                    xy_charts.line(label, sat.dims, getattr(sat, f"{name}_{tag}"), **xy_charts.look(i))
                    for tag, label, i in ways
                ],
                title=title,
                x_title="d_k",
                y_range=y_range,
                x_log=True,
                x_ticks=list(sat.dims),
                vlines=[(d_k, "")],
            )
            for name, title, y_range in plots
        ],
        height=380,
        digits=3,
        file="softmax_saturation",
    )


def row_bars(raw_weights: np.ndarray, scaled_weights: np.ndarray, d_k: int) -> Spec:
    """One row of attention weights at d_k, unscaled next to scaled."""
    return charts.bars_spec(
        [f"k{i}" for i in range(len(raw_weights))],
        {"scaled by 1/√d_k": np.asarray(scaled_weights), "unscaled": np.asarray(raw_weights)},
        f"one query against {len(raw_weights)} keys, d_k = {d_k}",
        height=320,
        y_title="weight",
        colors=[FIRST, SECOND],
        y_range=(0.0, 1.02),
        file=f"softmax_row_d_k_{d_k}",
    )


def _thin(n: int, keep: Sequence[int], points: int = 800) -> np.ndarray:
    """Sorted indices (<= points + len(keep),) spread over 0..n-1 plus the ones in keep:
    a smooth curve of 50,000 steps looks the same drawn through 800 of them."""
    grid = np.linspace(0, n - 1, min(n, points)).round().astype(int)
    extra = np.clip(np.asarray(keep, dtype=int), 0, n - 1)
    return np.unique(np.concatenate([grid, extra]))


def lr_chart(schedules: Schedules, warmup: int) -> Spec:
    """Learning rate against step (n,) for the two schedules, warm-up end marked; drawn
    through at most ~800 steps, always including the peak at the end of warm-up."""
    idx = _thin(len(schedules.steps), [warmup - 2, warmup - 1, warmup])
    steps = schedules.steps[idx]
    curves = (("warm-up, then 1/√step", schedules.vaswani, 0), ("warm-up, then cosine", schedules.cosine, 1))
    return xy_charts.xy_spec(
        [
            xy_charts.panel(
                [xy_charts.line(name, steps, lr[idx], **xy_charts.look(i)) for name, lr, i in curves],
                x_title="step",
                y_title="learning rate",
                vlines=[(warmup, "end of warm-up")],
                end_labels=True,
            )
        ],
        height=360,
        digits=6,
        file="learning_rate",
    )


def smoothing_chart(distribution: np.ndarray, target: int) -> Spec:
    """The one-hot target beside the smoothed one, per class."""
    one_hot = np.zeros(len(distribution))
    one_hot[target] = 1.0
    return charts.bars_spec(
        [f"class {i}" for i in range(len(distribution))],
        {"one-hot target": one_hot, "smoothed target": np.asarray(distribution)},
        height=340,
        colors=[MUTED, FIRST],  # grey with 3:1 against either theme's background
        y_range=(0.0, 1.05),
        file="label_smoothing",
    )


def attention_grid(
    attention: np.ndarray,
    query_tokens: Sequence[str],
    key_tokens: Sequence[str],
    *,
    title: str,
    cell_px: int = 150,
    cell_titles: list[list[str]] | None = None,
    file: str = "attention_grid",
) -> Spec:
    """A grid of heads (L, H, Tq, Tk) on a lesson page: attention_lab.charts.specs' grid with its colour bar
    (a lesson grid stands alone, no large head beside it to read values from), not clickable."""
    return charts.grid_spec(
        attention,
        list(query_tokens),
        list(key_tokens),
        title=title,
        cell_titles=cell_titles,
        cell_px=cell_px,
        colorbar=True,
        clickable=False,
        file=file,
    )
