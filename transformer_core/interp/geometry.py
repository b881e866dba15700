"""Query/key geometry of one head: the queries and keys of many inputs projected together to
two dimensions (PCA), with how much of the position the picture holds.

Why: a head attends where q·k is large, so where its queries and keys lie says what it looks
for. An absolute scheme (sinusoidal, learned) writes position into the vectors themselves, so
the picture orders them by position; RoPE adds position by rotating q and k at the dot product,
so the vectors before the rotation hold little of it; ALiBi and no positions hold none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.errors import ConfigError, InputError
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.models import GPT


def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x (N, d) -> (coordinates (N, 2) on the two principal axes of the centred data, the axes
    (2, d), the share of the variance each explains (2,))."""
    centred = x - x.mean(0, keepdims=True)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    total = float((s**2).sum()) or 1.0
    axes = vt[:2]
    return centred @ axes.T, axes, (s[:2] ** 2) / total


def position_r2(coords: np.ndarray, positions: np.ndarray) -> float:
    """How much of the position a linear read-out of the 2-D coordinates recovers: R² of
    positions (N,) fitted from coords (N, 2) plus a constant (0: none, 1: all)."""
    design = np.column_stack([coords, np.ones(len(coords))])
    fit, *_ = np.linalg.lstsq(design, positions.astype(np.float64), rcond=None)
    residual = positions - design @ fit
    spread = float(((positions - positions.mean()) ** 2).sum())
    return 0.0 if spread == 0 else 1.0 - float((residual**2).sum()) / spread


@dataclass(frozen=True)
class Geometry:
    """Queries and keys of one GPT head over several texts, projected together.

    coords (N, 2): queries first (n_queries of them), then keys; positions (N,), windows (N,) (the
    text each came from) and tokens (N) of each; vectors (N, d_head): what was projected;
    explained (2,): variance shares of the two axes; r2_queries, r2_keys: position_r2 of each
    set; rotated: whether the vectors are after RoPE's rotation (what the scores use)."""

    layer: int
    head: int
    coords: np.ndarray
    positions: np.ndarray
    windows: np.ndarray
    tokens: list[str]
    vectors: np.ndarray
    n_queries: int
    explained: np.ndarray
    r2_queries: float
    r2_keys: float
    rotated: bool

    def nearest_keys(self, query: int, top: int = 5) -> np.ndarray:
        """The keys (indices among the keys, 0..n_queries-1) query `query` scores highest by q·k
        of these vectors: in its own text, at its position or before (what a causal head sees),
        highest first."""
        n = self.n_queries
        seen = np.flatnonzero(
            (self.windows[n:] == self.windows[query]) & (self.positions[n:] <= self.positions[query])
        )
        scores = self.vectors[n + seen] @ self.vectors[query]  # (len(seen),)
        return seen[np.argsort(-scores, kind="stable")[:top]]


@dataclass(frozen=True)
class HeadVectors:
    """One head's queries and keys over several texts, in its own d_head space: queries (N, d_head)
    and keys (N, d_head) row for row at the same positions (N), texts (windows, N) and tokens (N)."""

    queries: np.ndarray
    keys: np.ndarray
    positions: np.ndarray
    windows: np.ndarray
    tokens: list[str]


@torch.inference_mode()
def head_vectors(
    model: GPT, tokenizer: Tokenizer, texts: Sequence[str], layer: int, head: int, *, rotated: bool = False
) -> HeadVectors:
    """Every position's query and key of head (layer, head) over `texts`; rotated: after RoPE's
    rotation (else before: the vectors the weights make)."""
    if not isinstance(model, GPT):
        raise ConfigError("geometry: reads a GPT's self-attention heads")
    if not (0 <= layer < model.config.n_layers and 0 <= head < model.config.n_heads):
        raise ConfigError(f"head: {layer}.{head} is outside the model's heads")
    queries, keys, positions, windows, tokens = [], [], [], [], []
    device = next(model.parameters()).device
    for w, text in enumerate(texts):
        ids = tokenizer.encode(text)[: model.config.max_len]
        if not ids:
            continue
        capture = AttentionCapture()
        model(torch.tensor([ids], device=device), capture=capture)
        record = capture[f"self.{layer}"]
        q, k = (record.q, record.k) if rotated else (record.q_raw, record.k_raw)
        queries.append(q[0, head].float().cpu().numpy())  # (T, d_head)
        keys.append(k[0, head].float().cpu().numpy())
        positions.append(np.arange(len(ids)))
        windows.append(np.full(len(ids), w))
        tokens.extend(tokenizer.token_labels(ids))
    if not queries:
        raise InputError("geometry: no text to read (every text was empty)")
    return HeadVectors(
        np.concatenate(queries),
        np.concatenate(keys),
        np.concatenate(positions),
        np.concatenate(windows),
        tokens,
    )


def qk_geometry(
    model: GPT, tokenizer: Tokenizer, texts: Sequence[str], layer: int, head: int, *, rotated: bool = False
) -> Geometry:
    """Every position's query and key of head (layer, head) over `texts`, projected jointly to
    2-D; rotated: after RoPE's rotation (else before: the vectors the weights make)."""
    vectors = head_vectors(model, tokenizer, texts, layer, head, rotated=rotated)
    n, pos = len(vectors.queries), vectors.positions
    both = np.concatenate([vectors.queries, vectors.keys])  # (2N, d_head)
    coords, _, explained = pca_2d(both)
    return Geometry(
        layer=layer,
        head=head,
        coords=coords,
        positions=np.concatenate([pos, pos]),
        windows=np.concatenate([vectors.windows, vectors.windows]),
        tokens=vectors.tokens + vectors.tokens,
        vectors=both,
        n_queries=n,
        explained=explained,
        r2_queries=position_r2(coords[:n], pos),
        r2_keys=position_r2(coords[n:], pos),
        rotated=rotated,
    )
