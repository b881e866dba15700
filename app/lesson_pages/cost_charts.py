"""/cost's charts: a block's FLOPs by part and one layer's attention memory, across the
sequence length on log-log axes. Specs only."""

from __future__ import annotations

from typing import Any

import numpy as np

from attention_lab.charts import specs as charts
from attention_lab.charts import xy_charts
from attention_lab.lessons.cost import CacheLesson, CacheStepView, Curves

Spec = dict[str, Any]
LENGTH_TICKS = [1, 8, 64, 512, 4096]
PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def si(value: float, unit: str = "") -> str:
    """1_125_120 -> '1.13 M', 67_108_864 with 'B' -> '67.1 MB'."""
    for scale, prefix in PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}".rstrip()
    return f"{value:.3g} {unit}".rstrip()


def decade_ticks(lo: float, hi: float, unit: str) -> list[tuple[float, str]]:
    """Powers of ten (every one, or every other over a wide range) from lo to hi, labelled."""
    first, last = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    step = 1 if last - first <= 10 else 2
    return [(10.0**e, si(10.0**e, unit)) for e in range(first, last + 1, step)]


def _over_lengths(
    series: list[Spec], y_title: str, y_range: tuple[float, float], unit: str, vlines: list[tuple[float, str]]
) -> Spec:
    """A log-log panel over the sequence lengths 1..8,192, its y ticks powers of ten in `unit`."""
    return xy_charts.panel(
        series,
        x_title="sequence length T",
        y_title=y_title,
        x_log=True,
        x_ticks=LENGTH_TICKS,
        y_log=True,
        y_range=y_range,
        y_ticks=decade_ticks(*y_range, unit),
        vlines=vlines,
        end_labels=True,
    )


def flops_chart(c: Curves, T: int) -> Spec:
    """FLOPs of one block's attention, projections and FFN against T, the crossover marked."""
    parts = [
        ("attention: Q·Kᵀ and weights·V", c.attention),
        ("projections W_Q, W_K, W_V, W_O", c.projections),
    ]
    parts += [("feed-forward network", c.ffn)] * bool(c.ffn.any())
    series = [xy_charts.line(name, c.lengths, y, **xy_charts.look(i)) for i, (name, y) in enumerate(parts)]
    lo = min(float(y[y > 0].min()) for _, y in parts)
    hi = max(float(y.max()) for _, y in parts)
    vlines = [(float(T), f"T = {T:,}")]
    if np.isfinite(c.crossover) and c.crossover <= c.lengths[-1]:
        vlines.append((c.crossover, f"crossover T = {c.crossover:,.0f}"))
    plot = _over_lengths(series, "FLOPs per block", (lo, hi), "", vlines)
    return xy_charts.xy_spec(
        [plot], title="FLOPs of one block, by part", height=380, digits=0, file="block_flops"
    )


def memory_chart(c: Curves, T: int, window: int) -> Spec:
    """One layer's attention-weight memory for one example: kept whole, in a sliding window,
    and by a fused kernel."""
    kinds = [("every T × T weight kept (fp32)", c.memory_full)]
    if c.memory_window is not None:
        kinds.append((f"sliding window W = {window:,}", c.memory_window))
    kinds.append(("fused kernel: no T × T matrix", c.memory_fused))
    series = [
        xy_charts.line(name, c.lengths, y, **xy_charts.look(i), dash="dash" if i else None)
        for i, (name, y) in enumerate(kinds)
    ]
    lo, hi = float(c.memory_fused.min()), float(c.memory_full.max())
    plot = _over_lengths(series, "bytes per layer per example", (lo, hi), "B", [(float(T), f"T = {T:,}")])
    return xy_charts.xy_spec(
        [plot], title="Attention weights kept by one layer", height=380, digits=0, file="attention_memory"
    )


def cache_time_chart(lesson: CacheLesson) -> Spec:
    """Milliseconds per written token, with the KV cache and without it."""
    step = np.arange(1, len(lesson.steps) + 1, dtype=np.float64)
    cached = np.array([s.seconds_cached * 1000 for s in lesson.steps])
    full = np.array([s.seconds_full * 1000 for s in lesson.steps])
    series = [
        xy_charts.line("with the KV cache: the new token only", step, cached, **xy_charts.look(0)),
        xy_charts.line("without: the whole prefix again", step, full, **xy_charts.look(1), dash="dash"),
    ]
    plot = xy_charts.panel(
        series,
        x_title="step (token written)",
        y_title="milliseconds",
        y_range=(0.0, float(max(full.max(), cached.max())) * 1.08),
    )
    return xy_charts.xy_spec(
        [plot], title="Time per written token, measured", height=320, digits=3, file="kv_cache_time"
    )


def cache_step_charts(
    view: CacheStepView, labels: tuple[str, ...], layer: int, head: int
) -> tuple[Spec, Spec]:
    """The step's keys (every cached row, the newest last) and its query's weights over them."""
    rows = [f"{i}:{label}" for i, label in enumerate(labels)]
    keys = charts.matrix_spec(
        view.keys,
        rows,
        f"K in the cache, layer {layer} head {head}: {len(rows)} rows, the last one new",
        value_name="value",
        file=f"kv_cache_keys_L{layer}H{head}",
    )
    weights = charts.head_spec(
        view.weights[None, :],
        [f"query {rows[-1]}"],
        rows,
        f"the new query's weights over {len(rows)} keys",
        height=200,
        file=f"kv_cache_weights_L{layer}H{head}",
    )
    return keys, weights
