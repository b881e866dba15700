"""Interpretability helpers on captured attention: head scores and one query step by step.

Pure numpy functions over `AttentionRecord`s and trace arrays, used by the explorers and
usable from a notebook: the anti-diagonal (reversal alignment) score of cross-attention
heads, one query's arithmetic q.k -> scale -> bias -> mask -> softmax -> sum of v, the
shift of a next-token distribution when heads are ablated, and future cells that receive
weight when the causal mask is off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from transformer_core.capture import AttentionRecord


@dataclass(frozen=True)
class QuerySteps:
    """One query of one head, step by step: the arithmetic of attention for row `query`."""

    q_raw: np.ndarray  # (d,) projection before any rotation
    q: np.ndarray  # (d,) what the scores use (after RoPE when the model uses it)
    k_raw: np.ndarray  # (Tk, d)
    k: np.ndarray  # (Tk, d)
    v: np.ndarray  # (Tk, d)
    dot: np.ndarray  # (Tk,) q . k_j
    scale: float  # 1/sqrt(d_k), or 1 when scaling is off
    scaled: np.ndarray  # (Tk,) dot * scale
    bias: np.ndarray | None  # (Tk,) ALiBi position bias, or None
    scores: np.ndarray  # (Tk,) scaled + bias: what the model fed to softmax
    allowed: np.ndarray  # (Tk,) bool, False = masked
    weights: np.ndarray  # (Tk,) the model's softmax weights
    output: np.ndarray  # (d,) sum_j weights_j v_j

    @property
    def rotated(self) -> bool:
        return not np.allclose(self.q_raw, self.q) or not np.allclose(self.k_raw, self.k)


def record_arrays(record: AttentionRecord, batch: int = 0) -> dict[str, Any]:
    """The numpy parts of one captured layer (one batch row) for the step-by-step view."""

    def arr(t: torch.Tensor) -> np.ndarray:
        return t[batch].float().cpu().numpy()

    return {
        "q_raw": arr(record.q_raw),
        "k_raw": arr(record.k_raw),
        "q": arr(record.q),
        "k": arr(record.k),
        "v": arr(record.v),
        "scores": arr(record.scores),
        "weights": arr(record.weights),
        "mask": record.full_mask[batch].cpu().numpy(),
        "bias": None if record.position_bias is None else record.position_bias.float().cpu().numpy(),
        "scale": float(record.scale),
    }


def query_steps(rec: dict[str, Any], head: int, query: int) -> QuerySteps:
    """Recompute one row of one head from its captured q, k, v so each step can be shown."""
    q_raw, q = rec["q_raw"][head, query], rec["q"][head, query]
    k_raw, k, v = rec["k_raw"][head], rec["k"][head], rec["v"][head]
    dot = k @ q
    scaled = dot * rec["scale"]
    bias = None if rec["bias"] is None else rec["bias"][head, query]
    weights = rec["weights"][head, query]
    return QuerySteps(
        q_raw=q_raw,
        q=q,
        k_raw=k_raw,
        k=k,
        v=v,
        dot=dot,
        scale=rec["scale"],
        scaled=scaled,
        bias=bias,
        scores=rec["scores"][head, query],
        allowed=rec["mask"][head, query].astype(bool),
        weights=weights,
        output=weights @ v,
    )


@dataclass(frozen=True)
class HeadMerge:
    """How a layer's heads become its attention output at one query: each head's output z_h =
    Σ_j w_hj v_hj (H, d_head), the heads side by side (H·d_head,) and W_O applied (d_model,)."""

    heads: np.ndarray
    concat: np.ndarray
    output: np.ndarray


def head_merge(
    rec: dict[str, Any],
    query: int,
    w_o: np.ndarray,
    b_o: np.ndarray | None = None,
    ablated: tuple[int, ...] = (),
) -> HeadMerge:
    """One query's multi-head output from a captured layer (record_arrays) and its output
    projection W_O (d_model, H·d_head) with bias b_o; ablated heads give zeros, as in the model."""
    heads = np.einsum(
        "hk,hkd->hd", rec["weights"][:, query], rec["v"]
    )  # (H, Tk) x (H, Tk, d_head) -> (H, d_head)
    heads[list(ablated)] = 0.0
    concat = heads.reshape(-1)  # (H, d_head) -> (H * d_head,): head 0's dimensions first
    return HeadMerge(heads, concat, w_o @ concat + (0.0 if b_o is None else b_o))


def softmax_allowed(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Softmax over the allowed entries; masked ones get exactly 0 (shown next to the model's)."""
    out = np.zeros_like(scores, dtype=np.float64)
    if allowed.any():
        z = scores[allowed].astype(np.float64)
        e = np.exp(z - z.max())
        out[allowed] = e / e.sum()
    return out


def distribution_shift(p: np.ndarray, q: np.ndarray, eps: float = 1e-12) -> tuple[float, float]:
    """(total variation, KL(p || q) in nats) between two next-token distributions."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    tv = 0.5 * float(np.abs(p - q).sum())
    support = p > 0
    kl = float((p[support] * (np.log(p[support]) - np.log(np.maximum(q[support], eps)))).sum())
    return tv, max(kl, 0.0)


def future_cells(weights: np.ndarray, threshold: float = 0.01) -> np.ndarray:
    """Cells above the diagonal (keys after the query) that get more than `threshold`."""
    Tq, Tk = weights.shape[-2:]
    return np.triu(np.ones((Tq, Tk), dtype=bool), k=1) & (weights > threshold)
