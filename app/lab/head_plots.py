"""The /heads page's figures, each cached by its inputs (lab.compute.figure_cache): the page
reruns on every click, and plotly's subplot construction costs ~100 ms a page."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from lab.compute import figure_cache
from transformer_core.interp import HeadScores, Importance

KIND_NAMES = {
    "self": "self-attention",
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder masked self-attention",
    "cross": "cross-attention",
}
LABELS = {
    "previous_token": "previous token",
    "diagonal": "current token",
    "first_token": "first token",
    "duplicate_token": "duplicate token",
    "induction": "induction",
    "anti_diagonal": "anti-diagonal",
    "monotonic": "monotonic",
    "entropy": "entropy (nats)",
    "mean_distance": "mean distance",
}
HEAT_PX = 46  # one layer x head cell of the score maps


@figure_cache
def score_maps(
    scores: HeadScores, kinds: tuple[str, ...], shown: tuple[str, ...], n_layers: int, n_heads: int
) -> go.Figure:
    """One map per score (columns) and attention kind (rows), each over layers x heads."""
    fig = make_subplots(
        rows=len(kinds),
        cols=len(shown),
        subplot_titles=[f"{LABELS[s]}" if r == 0 else "" for r in range(len(kinds)) for s in shown],
        horizontal_spacing=0.02,
        vertical_spacing=0.12 if len(kinds) > 1 else 0.0,
        row_titles=[KIND_NAMES[k] for k in kinds] if len(kinds) > 1 else None,
    )
    for r, kind in enumerate(kinds):
        for c, s in enumerate(shown):
            z = scores.scores[kind][s]
            bounded = s not in ("entropy", "mean_distance")
            fig.add_heatmap(
                z=np.where(np.isfinite(z), z, np.nan),
                row=r + 1,
                col=c + 1,
                zmin=0.0 if bounded else None,
                zmax=1.0 if bounded else None,
                colorscale="Blues" if bounded else "Greys",
                showscale=False,
                hovertemplate=f"{LABELS[s]}<br>layer %{{y}} head %{{x}}<br>%{{z:.3f}}<extra>{kind}</extra>",
                texttemplate="%{z:.2f}" if n_heads <= 4 and len(shown) <= 9 else None,
            )
    fig.update_yaxes(autorange="reversed", dtick=1, title_text="")
    fig.update_xaxes(dtick=1)
    fig.update_layout(
        height=110 + len(kinds) * max(HEAT_PX * n_layers, 90),
        margin={"l": 30, "r": 60, "t": 50, "b": 20},
    )
    return fig


@figure_cache
def pattern_grid(w: np.ndarray) -> go.Figure:
    """Small multiples of each head's pattern, w (L, H, Tq, Tk), on one 0..1 scale."""
    n_layers, n_heads = w.shape[:2]
    grid = make_subplots(
        rows=n_layers,
        cols=n_heads,
        subplot_titles=[f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)],
        horizontal_spacing=0.015,
        vertical_spacing=0.04,
    )
    for layer in range(n_layers):
        for head in range(n_heads):
            grid.add_heatmap(
                z=w[layer, head],
                row=layer + 1,
                col=head + 1,
                zmin=0,
                zmax=1,
                colorscale="Blues",
                showscale=False,
                hovertemplate="query %{y}<br>key %{x}<br>%{z:.3f}<extra></extra>",
            )
    grid.update_yaxes(autorange="reversed", showticklabels=False)
    grid.update_xaxes(showticklabels=False)
    grid.update_layout(height=60 + 170 * n_layers, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return grid


@figure_cache
def importance_maps(importance: Importance, kinds: tuple[str, ...], n_layers: int, n_heads: int) -> go.Figure:
    """The ablation sweep beside the gradient proxy, per kind, over layers x heads."""
    panels = [("Δ loss when ablated", importance.delta_loss, "RdBu_r", True)]
    if importance.delta_exact_match is not None:
        panels.append(("Δ exact match when ablated", importance.delta_exact_match, "RdBu", True))
    panels.append(("|∂loss/∂gate|", importance.gradient, "Oranges", False))
    imp = make_subplots(
        rows=len(kinds),
        cols=len(panels),
        subplot_titles=[p[0] if r == 0 else "" for r in range(len(kinds)) for p in panels],
        horizontal_spacing=0.08,
        vertical_spacing=0.12 if len(kinds) > 1 else 0.0,
        row_titles=[KIND_NAMES[k] for k in kinds] if len(kinds) > 1 else None,
    )
    for c, (title, values, scale, diverging) in enumerate(panels):
        bound = max(float(np.abs(values[k]).max()) for k in kinds) or 1.0
        for r, kind in enumerate(kinds):
            imp.add_heatmap(
                z=values[kind],
                row=r + 1,
                col=c + 1,
                zmin=-bound if diverging else 0.0,
                zmax=bound,
                colorscale=scale,
                showscale=False,
                texttemplate="%{z:.2f}" if n_heads <= 8 else None,
                hovertemplate=f"{title}<br>layer %{{y}} head %{{x}}<br>%{{z:.4f}}<extra>{kind}</extra>",
            )
    imp.update_yaxes(autorange="reversed", dtick=1)
    imp.update_xaxes(dtick=1)
    imp.update_layout(
        height=110 + len(kinds) * max(HEAT_PX * n_layers, 90), margin={"l": 30, "r": 60, "t": 50, "b": 20}
    )
    return imp


@figure_cache
def rollout_map(rollout: np.ndarray, rollout_tokens: tuple[str, ...]) -> go.Figure:
    """Rollout (T, T): how much of each position's final state traces back to each input token."""
    rollout_tokens = list(rollout_tokens)
    roll = make_subplots(rows=1, cols=1)
    roll.add_heatmap(
        z=rollout,
        x=list(range(len(rollout_tokens))),
        y=list(range(len(rollout_tokens))),
        colorscale="Blues",
        zmin=0,
        hovertemplate="from %{x} into %{y}<br>%{z:.3f}<extra></extra>",
    )
    ticks = {"tickmode": "array", "tickvals": list(range(len(rollout_tokens))), "ticktext": rollout_tokens}
    roll.update_xaxes(title_text="input token", **ticks)
    roll.update_yaxes(title_text="position", autorange="reversed", **ticks)
    roll.update_layout(height=420, width=520, margin={"l": 40, "r": 20, "t": 20, "b": 40})
    return roll
