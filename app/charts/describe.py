"""One sentence saying what an attention map shows for this input, for screen readers (the
chart's description) and for anyone who cannot see the picture (pure, no Streamlit).

The sentence names the head detector's template that holds most of the map's weight (the
same template scores as /heads, transformer_core.interp.heads) and the single strongest cell.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from transformer_core.interp.heads import (
    anti_diagonal_template,
    diagonal_template,
    first_token_template,
    previous_token_template,
    template_score,
)

#: a pattern holding at least this share of the weight is named as what the head does
NAMED_SHARE = 0.5

#: template -> (which maps it applies to, its keys for a (Tq, Tk) map, what it means in words)
PATTERNS: dict[str, tuple[str, Callable[[int, int, list[str]], np.ndarray], str]] = {
    "anti_diagonal": (
        "cross",
        lambda tq, tk, keys: anti_diagonal_template(tq, tk, tk - (keys[-1:] == ["<eos>"])),
        "output letters look at the mirror-image input letters",
    ),
    "previous_token": (
        "self",
        lambda tq, tk, keys: previous_token_template(tq),
        "each token looks at the one before it",
    ),
    "diagonal": ("self", lambda tq, tk, keys: diagonal_template(tq), "each token looks at itself"),
    "first_token": (
        "any",
        lambda tq, tk, keys: first_token_template(tq, tk),
        "the weight rests on the first key",
    ),
}


def pattern_scores(weights: np.ndarray, keys: list[str], kind: str) -> dict[str, np.ndarray]:
    """Each applicable pattern's template score of maps (..., Tq, Tk) -> (...): its share of
    each map's weight, NaN where its template marks no row the map has weight in. Every head
    of a grid at once."""
    w = np.nan_to_num(np.asarray(weights, dtype=np.float64))
    tq, tk = w.shape[-2:]
    cross = kind == "cross"
    return {
        name: template_score(w, make(tq, tk, keys))
        for name, (applies, make, _) in PATTERNS.items()
        if applies == "any" or (applies == "cross") == cross and (cross or tq == tk)
    }


def pattern_shares(weights: np.ndarray, keys: list[str], kind: str) -> dict[str, float]:
    """Each applicable pattern's share of the (Tq, Tk) map's weight, where it has one."""
    shares = {name: float(score) for name, score in pattern_scores(weights, keys, kind).items()}
    return {name: s for name, s in shares.items() if np.isfinite(s)}


def attention_sentence(weights: np.ndarray, queries: list[str], keys: list[str], kind: str) -> str:
    """What one head's (Tq, Tk) weights do, e.g. "output letters look at the mirror-image input
    letters (92% of the weight); the strongest weight, 0.981, goes from query 1 'n' to key 8 'n'"."""
    shares = pattern_shares(weights, keys, kind)
    best = max(shares, key=shares.__getitem__, default=None)
    if best is not None and shares[best] >= NAMED_SHARE:
        pattern = f"{PATTERNS[best][2]} ({shares[best]:.0%} of the weight)"
    else:
        pattern = "the weight is spread: no single pattern holds half of it"
    w = np.nan_to_num(np.asarray(weights, dtype=np.float64))
    q, k = np.unravel_index(int(np.argmax(w)), w.shape)
    strongest = (
        f"the strongest weight, {w[q, k]:.3f}, goes from query {q} '{queries[q]}' to key {k} '{keys[k]}'"
    )
    return f"{pattern}; {strongest}."


def _best_shares(maps: np.ndarray, keys: list[str], kind: str) -> np.ndarray:
    """Each head's (H, Tq, Tk) largest pattern share (H,), 0 where none applies. One layer's heads
    at once: a whole grid of a large model in float64 would take gigabytes."""
    scores = np.stack([np.zeros(len(maps)), *pattern_scores(maps, keys, kind).values()])
    return np.where(np.isfinite(scores), scores, 0.0).max(0)


def grid_sentence(attention: np.ndarray, queries: list[str], keys: list[str], kind: str) -> str:
    """What a grid of every head (L, H, Tq, Tk) shows: its size and its clearest head."""
    n_layers, n_heads = attention.shape[:2]
    clearest = np.stack([_best_shares(maps, keys, kind) for maps in attention])  # (L, H), a layer at a time
    layer, head = np.unravel_index(int(np.argmax(clearest)), clearest.shape)  # the first, layer by layer
    says = attention_sentence(attention[layer, head], queries, keys, kind)
    size = f"{n_layers} layers by {n_heads} heads, each a map of {len(queries)} queries by {len(keys)} keys"
    return f"{size}. The clearest, layer {layer} head {head}: {says}"
