"""Attention basics (/basics): queries, keys and values small enough to check by hand.

The worked examples (the page's inputs, whose results the teaching material states) live
here with the maths that uses them. Attention itself always goes through
`transformer_core.attention`; this module only shapes the inputs and names the results.

Shapes: m keys, d features, B batch, Tq queries, Tk keys, T tokens, H heads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from transformer_core import (
    attention_scores,
    masked_softmax,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
)
from transformer_core.attention import AttentionSite
from transformer_core.capture import AttentionCapture
from transformer_core.config import ModelConfig
from transformer_core.layers import EncoderBlock

ArrayLike = Sequence[float] | np.ndarray

# --------------------------------------------------------------------------------------
# Worked examples
# --------------------------------------------------------------------------------------

#: one scalar query against four scalar keys with easy-to-read 2-D values
QKV_TOKENS = ("the", "cat", "sat", "down")
QKV_QUERY = 1.5
QKV_KEYS = (0.0, 1.0, 2.0, 3.0)
QKV_VALUES = ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (0.5, 0.5))

#: two rows of scores whose tails are padding; the valid lengths are 2 and 3
PADDED_SCORES = ((2.0, 1.0, 0.0, 0.0), (0.3, 1.4, 0.2, 0.0))
PADDED_VALID_LENS = (2, 3)

#: house prices by 1-D location; predict the price of a house at location 2
HOUSE_LOCATIONS = (1.0, 2.0, 5.0, 3.0, 10.0, 1.0)
HOUSE_PRICES = (100.0, 120.0, 75.0, 90.0, 130.0, 95.0)
HOUSE_QUERY = 2.0

#: a batch of two sequences: 2 queries, 4 keys and 4 values each, d = 2
BATCH_Q = (((1.0, 0.0), (0.0, 1.0)), ((1.0, 1.0), (1.0, 0.0)))
BATCH_K = (
    ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (0.0, 0.5)),
    ((1.0, 1.0), (0.0, 1.0), (1.0, 0.0), (5.0, 5.0)),
)
BATCH_V = (
    ((10.0, 0.0), (0.0, 10.0), (5.0, 5.0), (2.0, 8.0)),
    ((1.0, 1.0), (0.0, 2.0), (2.0, 0.0), (9.0, 9.0)),
)

#: four tokens whose first two coordinates and last two coordinates tell different stories
SPLIT_X = (
    (2.0, 0.0, 0.0, 0.0),
    (1.0, 1.0, 0.0, 0.0),
    (0.0, 0.0, 2.0, 0.0),
    (0.0, 0.0, 1.0, 1.0),
)

#: a sentence with one word twice: the same token vector, two positions (d = 4)
PE_WORDS = ("the", "cat", "saw", "the")
_PE_VECTORS = np.round(np.random.default_rng(3).standard_normal((3, 4)), 2)  # one per distinct word
PE_X = _PE_VECTORS[[0, 1, 2, 0]]

#: four tokens whose order changes the meaning, with fixed random vectors (4, 4)
PERM_TOKENS = ("the", "dog", "bit", "man")
PERM_X = np.round(np.random.default_rng(7).standard_normal((len(PERM_TOKENS), 4)), 2)


def _t(x: Any) -> torch.Tensor:
    return torch.tensor(np.asarray(x, dtype=np.float64))  # a copy: inputs may be read-only views


# --------------------------------------------------------------------------------------
# One query over a key-value store
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Retrieval:
    """One query read out of a key-value store."""

    scores: np.ndarray  # (m,) scale * q.k_i
    weights: np.ndarray  # (m,) softmax of the scores
    context: np.ndarray  # (d_v,) sum_i weights_i * v_i


def retrieve(
    query: ArrayLike | float, keys: ArrayLike, values: ArrayLike, *, scale: float = 1.0
) -> Retrieval:
    """Attention of one query over m key-value pairs: the soft lookup, one row at a time.

    query (d,) or a scalar, keys (m, d) or (m,) for d = 1, values (m, d_v). scale multiplies
    the dot products (1.0: plain q.k; 1/sqrt(d_k) for scaled dot-product attention).
    """
    k = _t(keys)
    k = k[:, None] if k.dim() == 1 else k
    q = _t(query).reshape(1, -1)
    if q.size(-1) != k.size(-1):
        raise ValueError(f"query has {q.size(-1)} features but keys have {k.size(-1)}")
    out, weights = scaled_dot_product_attention(q, k, _t(values), scale=scale)
    scores = attention_scores(q, k, scale=scale)
    return Retrieval(scores[0].numpy(), weights[0].numpy(), out[0].numpy())


# --------------------------------------------------------------------------------------
# Masking padded keys
# --------------------------------------------------------------------------------------


def valid_length_mask(valid_lens: Sequence[int], num_keys: int) -> np.ndarray:
    """(B, num_keys) boolean, True = may attend: the first valid_lens[b] keys of row b,
    so padding at the tail of each sequence gets no weight."""
    lens = np.asarray(valid_lens)[:, None]
    return np.arange(num_keys)[None, :] < lens


def masked_rows(scores: ArrayLike, valid_lens: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Softmax of each row of scores (B, T) without and with its valid-length mask.

    Returns (plain (B, T), masked (B, T)): the masked weights are exactly 0 beyond each
    row's valid length and the remaining weights sum to 1 again; the plain ones show the leak.
    """
    s = _t(scores)
    mask = torch.as_tensor(valid_length_mask(valid_lens, s.size(-1)))
    return masked_softmax(s).numpy(), masked_softmax(s, mask).numpy()


# --------------------------------------------------------------------------------------
# Attention without learning: Nadaraya-Watson kernel regression
# --------------------------------------------------------------------------------------

KernelName = Literal["gaussian", "boxcar"]
KERNELS: tuple[str, ...] = ("gaussian", "boxcar")


def kernel_similarity(query: float, keys: ArrayLike, kernel: KernelName, width: float) -> np.ndarray:
    """(m,) similarity of a 1-D query to each 1-D key: a fixed, hand-made score.

    gaussian: exp(-(q - k)^2 / (2 width^2)); boxcar: 1 where |q - k| < width, else 0.
    """
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")
    gap = query - np.asarray(keys, dtype=np.float64)
    if kernel == "gaussian":
        return np.exp(-(gap**2) / (2 * width**2))
    if kernel == "boxcar":
        return (np.abs(gap) < width).astype(np.float64)
    raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")


@dataclass(frozen=True)
class KernelFit:
    """Nadaraya-Watson regression at one query: a kernel-weighted average of values."""

    similarity: np.ndarray  # (m,) raw kernel values
    weights: np.ndarray  # (m,) similarity / its sum; NaN when no key is similar at all
    prediction: float  # weights @ values; NaN when no key is similar at all


def kernel_regression(
    query: float, keys: ArrayLike, values: ArrayLike, kernel: KernelName, width: float = 1.0
) -> KernelFit:
    """Predict the value at `query` from (keys (m,), values (m,)) with a similarity kernel.

    The Gaussian weights are computed as a softmax of -(q - k)^2 / (2 width^2): the same
    numbers, but they never underflow to 0/0 far from every key. The boxcar prediction is
    NaN when no key lies within `width` of the query.
    """
    sim = kernel_similarity(query, keys, kernel, width)
    v = np.asarray(values, dtype=np.float64)
    if kernel == "gaussian":
        gap = query - np.asarray(keys, dtype=np.float64)
        weights = masked_softmax(_t(-(gap**2) / (2 * width**2))).numpy()
    elif sim.sum() > 0:
        weights = sim / sim.sum()
    else:
        weights = np.full_like(sim, np.nan)
    return KernelFit(sim, weights, float(weights @ v))


def kernel_regression_curve(
    queries: ArrayLike, keys: ArrayLike, values: ArrayLike, kernel: KernelName, width: float = 1.0
) -> np.ndarray:
    """(n,) predictions at n 1-D queries (NaN where the boxcar sees no key): the whole
    curve the query traces as it moves. Every query's weights at once, row for row the numbers
    `kernel_regression` gives at that query."""
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")
    gap = np.asarray(queries, dtype=np.float64)[:, None] - np.asarray(keys, dtype=np.float64)  # (n, m)
    if kernel == "gaussian":
        weights = masked_softmax(_t(-(gap**2) / (2 * width**2))).numpy()  # (n, m), a softmax per row
    elif kernel == "boxcar":
        sim = (np.abs(gap) < width).astype(np.float64)  # (n, m)
        total = sim.sum(axis=-1, keepdims=True)  # (n, 1)
        weights = np.where(total > 0, sim / np.where(total > 0, total, 1.0), np.nan)
    else:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    v = np.asarray(values, dtype=np.float64)
    return np.array([float(w @ v) for w in weights])  # (n,): each row's dot as at one query


# --------------------------------------------------------------------------------------
# Matrix form, heads, order
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MatrixAttention:
    """Scaled dot-product attention on a batch, in matrix form."""

    scores: np.ndarray  # (B, Tq, Tk) Q K^T / sqrt(d_k)
    weights: np.ndarray  # (B, Tq, Tk) row-wise softmax
    outputs: np.ndarray  # (B, Tq, d_v) weights @ V


def matrix_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, scaled: bool = True) -> MatrixAttention:
    """softmax(Q K^T / sqrt(d_k)) V for Q (B, Tq, d_k), K (B, Tk, d_k), V (B, Tk, d_v):
    every query at once, with its intermediate results kept for display."""
    qt, kt, vt = _t(q), _t(k), _t(v)
    scale = None if scaled else 1.0
    out, weights = scaled_dot_product_attention(qt, kt, vt, scale=scale)
    return MatrixAttention(attention_scores(qt, kt, scale=scale).numpy(), weights.numpy(), out.numpy())


@dataclass(frozen=True)
class HeadSplit:
    """Self-attention run separately on equal slices of the features, then concatenated."""

    columns: list[tuple[int, int]]  # per head: [start, stop) of the features it sees
    weights: np.ndarray  # (n_heads, T, T)
    outputs: np.ndarray  # (n_heads, T, d / n_heads)
    concat: np.ndarray  # (T, d) the heads' outputs side by side


def split_heads(x: ArrayLike, n_heads: int) -> HeadSplit:
    """Multi-head self-attention with identity projections on x (T, d).

    Head h uses features [h*d/n_heads, (h+1)*d/n_heads) as its queries, keys and values, so
    different heads see different coordinates and can form different patterns.
    """
    xt = _t(x)
    d = xt.size(-1)
    if n_heads < 1 or d % n_heads:
        raise ValueError(f"n_heads must divide the {d} features, got {n_heads}")
    width = d // n_heads
    parts = xt.unflatten(-1, (n_heads, width)).transpose(0, 1)  # (n_heads, T, width)
    out, weights = scaled_dot_product_attention(parts, parts, parts)
    columns = [(h * width, (h + 1) * width) for h in range(n_heads)]
    return HeadSplit(columns, weights.numpy(), out.numpy(), out.transpose(0, 1).flatten(-2).numpy())


@dataclass(frozen=True)
class PermutationCheck:
    """Self-attention on a sequence and on the same tokens in another order."""

    output: np.ndarray  # (T, d) on x in its original order
    shuffled_output: np.ndarray  # (T, d) on x[perm] (plus positions, if added)
    max_abs_diff: float  # max |output[perm] - shuffled_output|: 0 means "shuffled in, shuffled out"


def permutation_check(x: ArrayLike, perm: Sequence[int], *, add_positions: bool = False) -> PermutationCheck:
    """Self-attention (q = k = v = input) on x (T, d) and on x[perm]: attention alone is
    blind to order.

    Without positions the second output is exactly the first one reordered by perm. With
    add_positions, the sinusoidal code of each slot is added after reordering (a slot's
    position stays with the slot, not the token) and the two outputs no longer match.
    """
    xt = _t(x)
    T, d = xt.shape
    if sorted(perm) != list(range(T)):
        raise ValueError(f"perm must be a permutation of 0..{T - 1}, got {list(perm)}")
    shuffled = xt[list(perm)]
    if add_positions:
        pe = sinusoidal_positional_encoding(T, d, dtype=torch.float64)
        xt, shuffled = xt + pe, shuffled + pe
    out, _ = scaled_dot_product_attention(xt, xt, xt)
    out_s, _ = scaled_dot_product_attention(shuffled, shuffled, shuffled)
    diff = float((out[list(perm)] - out_s).abs().max())
    return PermutationCheck(out.numpy(), out_s.numpy(), diff)


# --------------------------------------------------------------------------------------
# One encoder block, opened
# --------------------------------------------------------------------------------------

#: the block of chapter 004's trace: d = 4, h = 2, T = 3, d_ff = 8, Post-LN, ReLU, no biases in
#: the attention projections; with torch.manual_seed(seed) drawing x and then the weights
BLOCK_CONFIG = ModelConfig(
    arch="seq2seq", vocab_size=8, d_model=4, n_heads=2, n_layers=1, d_ff=8, max_len=8,
    norm_position="post", activation="relu", attention_bias=False,
)  # fmt: skip


@dataclass(frozen=True)
class BlockTrace:
    """Every intermediate of one Post-LN encoder block on three 4-d tokens, each (T, .)."""

    x: np.ndarray  # (3, 4) the block's input: embeddings plus positions
    weights: np.ndarray  # (2, 3, 3) each head's attention weights
    heads: np.ndarray  # (3, 4) the two heads' outputs (3, 2) side by side: concat(head_0, head_1)
    w_o: np.ndarray  # (4, 4) W_O, mixing the concatenated heads
    attention: np.ndarray  # (3, 4) MHA(x) = concat · W_Oᵀ
    residual_1: np.ndarray  # (3, 4) x + MHA(x)
    normed_1: np.ndarray  # (3, 4) LayerNorm(x + MHA(x))
    hidden: np.ndarray  # (3, 8) ReLU(normed_1 · W_1ᵀ + b_1)
    ffn: np.ndarray  # (3, 4) hidden · W_2ᵀ + b_2
    output: np.ndarray  # (3, 4) LayerNorm(normed_1 + FFN(normed_1))


@torch.no_grad()
def block_trace(seed: int) -> BlockTrace:
    """The library's EncoderBlock, run one step at a time (the block itself gives the same output)."""
    torch.manual_seed(seed)
    x = torch.randn(1, 3, 4)  # (B, T, d)
    block = EncoderBlock(BLOCK_CONFIG).eval()
    capture = AttentionCapture()
    attention = block.self_attn(x, AttentionSite("encoder_self", 0, capture=capture))
    record = capture.records[0]
    heads = (
        (record.weights @ record.v).transpose(1, 2).reshape(1, 3, 4)
    )  # (B, H, T, d_head) -> (B, T, H*d_head)
    residual_1 = x + attention
    normed_1 = block.norm_self(residual_1)
    assert block.ffn is not None and block.norm_ffn is not None
    hidden = torch.relu(block.ffn.w1(normed_1))
    ffn = block.ffn.w2(hidden)
    output = block.norm_ffn(normed_1 + ffn)

    def arr(t: torch.Tensor) -> np.ndarray:
        return t[0].double().numpy()

    w_o = block.self_attn.out_proj.weight.double().numpy()
    return BlockTrace(
        arr(x), arr(record.weights), arr(heads), w_o, arr(attention), arr(residual_1), arr(normed_1),
        arr(hidden), arr(ffn), arr(output),
    )  # fmt: skip


def add_positions(x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(PE, Z = X + PE) for token vectors X (T, d): the sinusoidal code of positions 0..T-1."""
    x = np.asarray(x, dtype=np.float64)
    pe = sinusoidal_positional_encoding(x.shape[0], x.shape[1]).double().numpy()
    return pe, x + pe
