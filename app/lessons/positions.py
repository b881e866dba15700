"""Positional encodings (/positions): sinusoidal codes and their linear-shift property,
RoPE, ALiBi, and the learned tables of trained models.

Every code comes from `transformer_core.positional` (the float64 sinusoidal table for exact
identity checks) or from a model's public `position_codes`; this module only compares them.

Shapes: P positions (table rows), d or d_model features, d_head per-head features,
n position pairs, H heads (n_heads), T sequence length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from transformer_core import (
    GPT,
    Seq2Seq,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    causal_mask,
    masked_softmax,
    rope_angles,
    shift_rotation,
    sinusoidal_positional_encoding,
    t5_relative_position_bucket,
)
from transformer_core.positional import T5Positions, t5_max_distance

ArrayLike = Sequence[float] | np.ndarray

#: RoPE example: head size, and the key positions n of the "same offset, other place" table
ROPE_D_HEAD = 16
ROPE_STARTS = (0, 5, 20, 50, 100)
#: a random q and k (ROPE_D_HEAD,) each, fixed so the table's numbers can be quoted
ROPE_Q, ROPE_K = np.random.default_rng(3).standard_normal((2, ROPE_D_HEAD))
#: shipped checkpoints whose positions are a learned table
LEARNED_EXPECTED = ("reverse-learned", "gpt-learned")


def _unit_rows(table: ArrayLike) -> np.ndarray:
    t = np.asarray(table, dtype=np.float64)
    return t / np.maximum(np.linalg.norm(t, axis=-1, keepdims=True), 1e-12)


def cosine_similarity_matrix(table: ArrayLike) -> np.ndarray:
    """(P, P) cosine similarity between every pair of rows of table (P, d): which
    positions look alike to attention."""
    unit = _unit_rows(table)
    return unit @ unit.T


def adjacent_similarity(table: ArrayLike) -> np.ndarray:
    """(P - 1,) cosine similarity of row p and row p + 1 of table (P, d): how smoothly a
    table moves from one position to the next."""
    unit = _unit_rows(table)
    return (unit[:-1] * unit[1:]).sum(-1)


# --------------------------------------------------------------------------------------
# The linear-shift property
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShiftCheck:
    rotation: np.ndarray  # (d, d) block-diagonal M with PE(p + offset) = M PE(p)
    first: int  # the checked positions are p = first .. first + num_positions - 1
    max_abs_error: float  # max over those p and all dims of |M PE(p) - PE(p + offset)|


def shift_check(num_positions: int, d_model: int, offset: int) -> ShiftCheck:
    """Check PE(p + offset) = M(offset) PE(p) for num_positions consecutive p, in float64:
    one fixed matrix moves every position by the same offset.

    The p start at 0, or at -offset for a negative offset so that p + offset >= 0.
    """
    m = shift_rotation(offset, d_model)
    first = max(0, -offset)
    table = sinusoidal_positional_encoding(
        first + num_positions + max(offset, 0), d_model, dtype=torch.float64
    )
    here = table[first : first + num_positions]
    there = table[first + offset : first + offset + num_positions]
    return ShiftCheck(m.numpy(), first, float((here @ m.T - there).abs().max()))


# --------------------------------------------------------------------------------------
# RoPE
# --------------------------------------------------------------------------------------


def rope_frequency(d_head: int, pair: int) -> float:
    """Radians per position by which RoPE turns pair `pair` (dims 2*pair, 2*pair+1): the
    speed of that pair's clock."""
    cos, sin = rope_angles(torch.tensor([1]), d_head)
    return float(torch.atan2(sin[0, pair], cos[0, pair]))


def rope_pair_path(vector: ArrayLike, positions: ArrayLike, d_head: int, pair: int) -> np.ndarray:
    """(T, 2): a 2-D vector placed in pair `pair` of a d_head vector, rotated by RoPE at
    each of T positions: the path one pair traces as the token moves."""
    if not 0 <= pair < d_head // 2:
        raise ValueError(f"pair must be in 0..{d_head // 2 - 1}, got {pair}")
    pos = torch.as_tensor(np.asarray(positions), dtype=torch.long)
    x = torch.zeros(len(pos), d_head)
    x[:, 2 * pair : 2 * pair + 2] = torch.as_tensor(np.asarray(vector, dtype=np.float32))
    rotated = apply_rope(x, *rope_angles(pos, d_head))
    return rotated[:, 2 * pair : 2 * pair + 2].double().numpy()


def rope_scores(q: ArrayLike, k: ArrayLike, position_pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """(n,) q.k after RoPE puts q at position m and k at position n, for each (m, n).

    q, k (d_head,) with d_head even. Pairs with the same m - n give the same score: RoPE
    makes scores relative.
    """
    qt = torch.as_tensor(np.asarray(q, dtype=np.float32))
    kt = torch.as_tensor(np.asarray(k, dtype=np.float32))
    d_head = qt.numel()
    m = torch.tensor([a for a, _ in position_pairs])
    n = torch.tensor([b for _, b in position_pairs])
    q_rot = apply_rope(qt.expand(len(m), d_head), *rope_angles(m, d_head))
    k_rot = apply_rope(kt.expand(len(n), d_head), *rope_angles(n, d_head))
    return (q_rot.double() * k_rot.double()).sum(-1).numpy()


def absolute_scores(q: ArrayLike, k: ArrayLike, position_pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """(n,) (q + PE(m)).(k + PE(n)) with added sinusoidal codes, for positions m, n >= 0: for
    contrast with RoPE, these change with the absolute positions even when m - n is fixed."""
    qa, ka = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    m = [a for a, _ in position_pairs]
    n = [b for _, b in position_pairs]
    table = sinusoidal_positional_encoding(max(m + n) + 1, qa.size, dtype=torch.float64).numpy()
    return ((qa + table[m]) * (ka + table[n])).sum(-1)


# --------------------------------------------------------------------------------------
# ALiBi
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlibiDemo:
    slopes: np.ndarray  # (H,)
    bias: np.ndarray  # (H, T, T) -slope * |i - j|
    mask: np.ndarray  # (T, T) causal, True = may attend
    scores: np.ndarray  # (T, T) content scores before the bias
    weights: np.ndarray  # (H, T, T) masked softmax(scores + bias)


def alibi_demo(n_heads: int, length: int, *, content: float = 1.0, seed: int = 0) -> AlibiDemo:
    """ALiBi on a causal (T, T) score matrix, T = length: random content scores (std
    `content`; 0 gives equal content so only the distance bias shapes the weights) plus
    each head's bias, so steep heads look near and gentle heads far."""
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(length, length, generator=gen) * content
    slopes = alibi_slopes(n_heads)
    pos = torch.arange(length)
    bias = alibi_bias(slopes, pos, pos)
    mask = causal_mask(length)
    weights = masked_softmax(scores[None] + bias, mask)
    return AlibiDemo(slopes.numpy(), bias.numpy(), mask.numpy(), scores.numpy(), weights.numpy())


# --------------------------------------------------------------------------------------
# Learned tables
# --------------------------------------------------------------------------------------


def learned_position_table(model: GPT | Seq2Seq) -> np.ndarray:
    """(max_len, d_model) the trained position table of a model with learned positions
    (a Seq2Seq model: its encoder's table), to set beside the sinusoidal one.

    Raises ValueError for other schemes."""
    if model.config.positions != "learned":
        raise ValueError(f"this model uses {model.config.positions!r} positions, not a learned table")
    return model.position_codes(model.config.max_len).detach().float().cpu().numpy()


def positions_seen_in_training(meta: dict[str, Any]) -> int | None:
    """How many leading positions a checkpoint's training data ever filled (of the
    table that learned positions use): reversal sources are at most max_len characters
    plus EOS; a language model reads blocks of block_size. None when unknown."""
    args = meta.get("train_args") or {}
    try:
        if meta.get("task") == "reverse":
            return int(args["max_len"]) + 1
        if meta.get("task") == "lm":
            return int(args["block_size"])
    except (KeyError, TypeError, ValueError):
        return None
    return None


def t5_bucket_map(length: int, bidirectional: bool, max_len: int) -> np.ndarray:
    """(length, length) T5 bucket of every query i and key j (of j - i), for a model of max_len:
    one bucket per small distance, log-spaced buckets for larger ones, shared beyond the last."""
    pos = torch.arange(length)
    relative = pos[None, :] - pos[:, None]  # (Tq, Tk), j - i
    return t5_relative_position_bucket(relative, bidirectional, max_distance=t5_max_distance(max_len)).numpy()


@dataclass(frozen=True)
class T5Biases:
    """One T5 scheme's learned biases read along the distance j - i (key minus query)."""

    distances: np.ndarray  # (D,) from -(span - 1) to span - 1, or to 0 where causal
    buckets: np.ndarray  # (D,) the bucket of each distance
    bias: np.ndarray  # (H, D) what each head adds to a score at that distance


def t5_schemes(model: GPT | Seq2Seq) -> dict[str, T5Positions]:
    """The model's T5 schemes by where they act: an encoder's (both directions) and a decoder's
    (causal), or a GPT's."""
    where = {"src_positions": "encoder", "tgt_positions": "decoder", "positions": "GPT"}
    return {
        where.get(name, name): module
        for name, module in model.named_modules()
        if isinstance(module, T5Positions)
    }


def t5_head_biases(scheme: T5Positions, span: int) -> T5Biases:
    """Each head's learned bias at every distance a query `span` positions long can see."""
    last = 0 if scheme.causal else span - 1
    distances = torch.arange(-(span - 1), last + 1)
    buckets = t5_relative_position_bucket(
        distances, not scheme.causal, scheme.num_buckets, scheme.max_distance
    )
    bias = scheme.relative_attention_bias.weight.detach().float().cpu()[buckets].T  # (D, H) -> (H, D)
    return T5Biases(distances.numpy(), buckets.numpy(), bias.numpy())
