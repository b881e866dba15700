"""The /heads page's charts (lab.charts specs), each cached by its inputs
(lab.compute.spec_cache): the page reruns on every click."""

from __future__ import annotations

import numpy as np

from lab import charts
from lab.compute import spec_cache
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
UNBOUNDED = ("entropy", "mean_distance")  # not shares of attention: grey, their own range


def _finite_max(values: list[np.ndarray]) -> float:
    found = [float(np.nanmax(v)) for v in values if np.isfinite(v).any()]
    return max(found, default=1.0) or 1.0


@spec_cache
def score_maps(
    scores: HeadScores, kinds: tuple[str, ...], shown: tuple[str, ...], n_layers: int, n_heads: int
) -> dict:
    """One map per score (columns) and attention kind (rows), each over layers x heads; the
    shares of attention on one 0..1 blue scale, entropy and distance grey on their own."""
    maps = []
    for kind in kinds:
        for s in shown:
            z = np.where(np.isfinite(scores.scores[kind][s]), scores.scores[kind][s], np.nan)
            bounded = s not in UNBOUNDED
            top = 1.0 if bounded else _finite_max([scores.scores[k][s] for k in kinds])
            maps.append(
                {
                    "title": LABELS[s],
                    "values": z,
                    "zmin": 0.0,
                    "zmax": top,
                    "colorscale": "Blues" if bounded else "Greys",
                    "value_name": f"{LABELS[s]} ({KIND_NAMES[kind]})",
                }
            )
    return charts.maps_spec(
        maps,
        columns=len(shown),
        row_titles=[KIND_NAMES[k] for k in kinds] if len(kinds) > 1 else None,
        cell_px=HEAT_PX,
        digits=2 if n_heads <= 4 and len(shown) <= 9 else None,
        file="heads_scores",
    )


@spec_cache
def pattern_grid(w: np.ndarray, query_tokens: tuple[str, ...], key_tokens: tuple[str, ...]) -> dict:
    """Small multiples of each head's pattern, w (L, H, Tq, Tk), on one 0..1 scale."""
    return charts.grid_spec(
        w, list(query_tokens), list(key_tokens), cell_px=150, clickable=False, file="heads_patterns"
    )


@spec_cache
def importance_maps(importance: Importance, kinds: tuple[str, ...], n_layers: int, n_heads: int) -> dict:
    """The ablation sweep beside the gradient proxy, per kind, over layers x heads."""
    panels = [("Δ loss when ablated", importance.delta_loss, "RdBu_r", True)]
    if importance.delta_exact_match is not None:
        panels.append(("Δ exact match when ablated", importance.delta_exact_match, "RdBu", True))
    panels.append(("|∂loss/∂gate|", importance.gradient, "Oranges", False))
    bounds = [max(float(np.abs(values[k]).max()) for k in kinds) or 1.0 for _, values, _, _ in panels]
    maps = [
        {
            "title": title,
            "values": values[kind],
            "zmin": -bound if diverging else 0.0,
            "zmax": bound,
            "colorscale": scale,
            "value_name": f"{title} ({KIND_NAMES[kind]})",
        }
        for kind in kinds
        for (title, values, scale, diverging), bound in zip(panels, bounds, strict=True)
    ]
    return charts.maps_spec(
        maps,
        columns=len(panels),
        row_titles=[KIND_NAMES[k] for k in kinds] if len(kinds) > 1 else None,
        cell_px=HEAT_PX,
        digits=2 if n_heads <= 8 else None,
        file="heads_importance",
    )


@spec_cache
def rollout_map(rollout: np.ndarray, rollout_tokens: tuple[str, ...]) -> dict:
    """Rollout (T, T): how much of each position's final state traces back to each input token."""
    spec = charts.head_spec(
        rollout,
        list(rollout_tokens),
        list(rollout_tokens),
        zmax=float(np.max(rollout)) or 1.0,
        value_name="share",
        height=420,
        file="heads_rollout",
    )
    spec.update(x_title="input token", y_title="position")
    return spec
