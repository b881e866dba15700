"""Small, pure computations behind the lesson pages (/basics, /positions, /variance).

Every function takes plain numbers or arrays and returns numpy arrays or small frozen
dataclasses of them, so the app can cache results and tests can check them against the
worked examples of the teaching material. Attention itself always goes through
`transformer_core.attention`, positions through `transformer_core.positional`.

Shapes use: m keys, d features, B batch, T positions, H heads, P table rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from transformer_core.attention import attention_scores, masked_softmax, scaled_dot_product_attention
from transformer_core.config import InferenceOptions
from transformer_core.interp.trace import trace_gpt, trace_seq2seq
from transformer_core.masks import causal_mask
from transformer_core.positional import (
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_angles,
    shift_rotation,
    sinusoidal_positional_encoding,
)
from transformer_core.train.schedules import label_smoothing_target, vaswani_lr, warmup_cosine_lr

ArrayLike = Sequence[float] | np.ndarray

# --------------------------------------------------------------------------------------
# Worked examples: inputs whose results the teaching material states (test oracles)
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


def _t(x: Any) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float64), dtype=torch.float64)


def entropy(weights: ArrayLike, axis: int = -1) -> np.ndarray:
    """Shannon entropy in nats of distributions along `axis` (0 log 0 counts as 0)."""
    p = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(axis=axis)


# --------------------------------------------------------------------------------------
# Attention basics
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
    """Attention of one query over m key-value pairs.

    query (d,) or a scalar, keys (m, d) or (m,) for d = 1, values (m, d_v). scale multiplies
    the dot products (1.0: plain q.k; 1/sqrt(d) for scaled dot-product attention).
    """
    k = _t(keys)
    k = k[:, None] if k.dim() == 1 else k
    q = _t(query).reshape(1, -1)
    if q.size(-1) != k.size(-1):
        raise ValueError(f"query has {q.size(-1)} features but keys have {k.size(-1)}")
    v = _t(values)
    out, weights = scaled_dot_product_attention(q, k, v, scale=scale)
    scores = attention_scores(q, k, scale=scale)
    return Retrieval(scores[0].numpy(), weights[0].numpy(), out[0].numpy())


def valid_length_mask(valid_lens: Sequence[int], num_keys: int) -> np.ndarray:
    """(B, num_keys) boolean: True for the first valid_lens[b] keys of row b."""
    lens = np.asarray(valid_lens)[:, None]
    return np.arange(num_keys)[None, :] < lens


def masked_rows(scores: ArrayLike, valid_lens: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Softmax of each row of scores (B, T) without and with its valid-length mask.

    Returns (plain (B, T), masked (B, T)): the masked weights are exactly 0 beyond each
    row's valid length and the remaining weights sum to 1 again.
    """
    s = _t(scores)
    mask = torch.as_tensor(valid_length_mask(valid_lens, s.size(-1)))
    return masked_softmax(s).numpy(), masked_softmax(s, mask).numpy()


KernelName = Literal["gaussian", "boxcar"]
KERNELS: tuple[str, ...] = ("gaussian", "boxcar")


def kernel_similarity(query: float, keys: ArrayLike, kernel: KernelName, width: float) -> np.ndarray:
    """(m,) similarity of a 1-D query to each 1-D key.

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
    """(n,) predictions at many 1-D queries (NaN where the boxcar sees no key)."""
    return np.array([kernel_regression(float(q), keys, values, kernel, width).prediction for q in queries])


@dataclass(frozen=True)
class MatrixAttention:
    """Scaled dot-product attention on a batch, in matrix form."""

    scores: np.ndarray  # (B, Tq, Tk) Q K^T / sqrt(d)
    weights: np.ndarray  # (B, Tq, Tk) row-wise softmax
    outputs: np.ndarray  # (B, Tq, d_v) weights @ V


def matrix_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, scaled: bool = True) -> MatrixAttention:
    """softmax(Q K^T / sqrt(d)) V for Q (B, Tq, d), K (B, Tk, d), V (B, Tk, d_v)."""
    qt, kt, vt = _t(q), _t(k), _t(v)
    scale = None if scaled else 1.0
    out, weights = scaled_dot_product_attention(qt, kt, vt, scale=scale)
    return MatrixAttention(attention_scores(qt, kt, scale=scale).numpy(), weights.numpy(), out.numpy())


@dataclass(frozen=True)
class HeadSplit:
    """Self-attention run separately on equal slices of the features, then concatenated."""

    columns: list[tuple[int, int]]  # per head: [start, stop) of the features it sees
    weights: np.ndarray  # (H, T, T)
    outputs: np.ndarray  # (H, T, d / H)
    concat: np.ndarray  # (T, d) the heads' outputs side by side


def split_heads(x: ArrayLike, n_heads: int) -> HeadSplit:
    """Multi-head self-attention with identity projections on x (T, d).

    Head h uses features [h*d/H, (h+1)*d/H) as its queries, keys and values, so different
    heads see different coordinates and can form different patterns.
    """
    xt = _t(x)
    d = xt.size(-1)
    if n_heads < 1 or d % n_heads:
        raise ValueError(f"n_heads must divide the {d} features, got {n_heads}")
    width = d // n_heads
    parts = xt.unflatten(-1, (n_heads, width)).transpose(0, 1)  # (H, T, width)
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
    """Self-attention (q = k = v = input) on x (T, d) and on x[perm].

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
        pe = sinusoidal_positional_encoding(T, d).double()
        xt, shuffled = xt + pe, shuffled + pe
    out, _ = scaled_dot_product_attention(xt, xt, xt)
    out_s, _ = scaled_dot_product_attention(shuffled, shuffled, shuffled)
    diff = float((out[list(perm)] - out_s).abs().max())
    return PermutationCheck(out.numpy(), out_s.numpy(), diff)


# --------------------------------------------------------------------------------------
# Why divide by sqrt(d_k)
# --------------------------------------------------------------------------------------


def score_samples(d_k: int, n_samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(raw (n,), scaled (n,)): q.k and q.k / sqrt(d_k) for n pairs of independent
    vectors with unit-variance entries; raw has variance ~ d_k, scaled ~ 1."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(n_samples, d_k, generator=gen)
    k = torch.randn(n_samples, d_k, generator=gen)
    raw = (q * k).sum(-1).double()
    return raw.numpy(), (raw / math.sqrt(d_k)).numpy()


@dataclass(frozen=True)
class VarianceTable:
    dims: np.ndarray  # (n,) d_k
    raw: np.ndarray  # (n,) population variance of q.k
    scaled: np.ndarray  # (n,) population variance of q.k / sqrt(d_k)


def score_variance_table(dims: Sequence[int], n_samples: int, seed: int = 0) -> VarianceTable:
    """Measured variance of raw and scaled dot products for each d_k in dims."""
    raw, scaled = [], []
    for d in dims:
        r, s = score_samples(int(d), n_samples, seed)
        raw.append(r.var())
        scaled.append(s.var())
    return VarianceTable(np.asarray(dims), np.asarray(raw), np.asarray(scaled))


def softmax_jacobian_norm(weights: ArrayLike) -> np.ndarray:
    """Frobenius norm of d softmax / d scores = diag(p) - p p^T for each row p (..., m).

    ||J||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2: it is largest for a spread-out row and
    goes to 0 as the row becomes one-hot, which is when gradients stop flowing.
    """
    p = np.asarray(weights, dtype=np.float64)
    s2 = (p**2).sum(-1)
    return np.sqrt(np.maximum(s2 - 2 * (p**3).sum(-1) + s2**2, 0.0))


@dataclass(frozen=True)
class SoftmaxRow:
    scores: np.ndarray  # (m,) raw q.k_i
    raw_weights: np.ndarray  # (m,) softmax(q.k)
    scaled_weights: np.ndarray  # (m,) softmax(q.k / sqrt(d_k))


def softmax_row(d_k: int, n_keys: int, seed: int = 0) -> SoftmaxRow:
    """One query against n_keys random keys (unit-variance entries) in d_k dimensions."""
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(1, d_k, generator=gen, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=gen, dtype=torch.float64)
    raw = attention_scores(q, k, scale=1.0)[0]
    return SoftmaxRow(raw.numpy(), masked_softmax(raw).numpy(), masked_softmax(raw / math.sqrt(d_k)).numpy())


@dataclass(frozen=True)
class Saturation:
    """Averages over random rows of scores, per d_k, without and with the 1/sqrt(d_k)."""

    dims: np.ndarray  # (n,)
    entropy_raw: np.ndarray  # (n,) nats; log(n_keys) is a uniform row, 0 one-hot
    entropy_scaled: np.ndarray
    max_raw: np.ndarray  # (n,) largest weight in the row
    max_scaled: np.ndarray
    grad_raw: np.ndarray  # (n,) Frobenius norm of the softmax Jacobian
    grad_scaled: np.ndarray


def softmax_saturation(dims: Sequence[int], n_keys: int, n_rows: int = 256, seed: int = 0) -> Saturation:
    """How sharp softmax rows get as d_k grows: n_rows queries, each against n_keys keys."""
    cols: dict[str, list[float]] = {k: [] for k in ("er", "es", "mr", "ms", "gr", "gs")}
    for d in dims:
        gen = torch.Generator().manual_seed(seed)
        q = torch.randn(n_rows, 1, int(d), generator=gen)
        k = torch.randn(n_rows, n_keys, int(d), generator=gen)
        raw = attention_scores(q, k, scale=1.0)[:, 0].double()  # (n_rows, n_keys)
        for tag, scores in (("r", raw), ("s", raw / math.sqrt(int(d)))):
            p = masked_softmax(scores).numpy()
            cols["e" + tag].append(float(entropy(p).mean()))
            cols["m" + tag].append(float(p.max(-1).mean()))
            cols["g" + tag].append(float(softmax_jacobian_norm(p).mean()))
    a = {k: np.asarray(v) for k, v in cols.items()}
    return Saturation(np.asarray(dims), a["er"], a["es"], a["mr"], a["ms"], a["gr"], a["gs"])


@dataclass(frozen=True)
class Sharpness:
    mean_max_weight: float  # average over query rows of the largest weight
    mean_entropy: float  # average over query rows, nats


def attention_sharpness(weights: ArrayLike) -> Sharpness:
    """Mean max weight and mean entropy over every row of weights (..., Tq, Tk).

    Rows that are all zero (a query that may attend to nothing) are left out.
    """
    w = np.asarray(weights, dtype=np.float64)
    rows = w.reshape(-1, w.shape[-1])
    rows = rows[rows.sum(-1) > 0]
    if rows.size == 0:
        return Sharpness(float("nan"), float("nan"))
    return Sharpness(float(rows.max(-1).mean()), float(entropy(rows).mean()))


@dataclass(frozen=True)
class ScalingComparison:
    """One shipped model on one text, with and without the 1/sqrt(d_k) on its scores.

    attention maps kind -> (L, H, Tq, Tk); query/key labels per kind; output is the
    generated reversal (seq2seq) or "" (GPT); stats per kind.
    """

    scaled: dict[str, np.ndarray]
    unscaled: dict[str, np.ndarray]
    query_tokens: dict[str, dict[str, list[str]]]  # "scaled"/"unscaled" -> kind -> labels
    key_tokens: dict[str, dict[str, list[str]]]
    output: dict[str, str]  # "scaled"/"unscaled" -> generated text
    stats: dict[str, dict[str, Sharpness]]  # "scaled"/"unscaled" -> kind -> Sharpness
    unknown: list[tuple[int, str]]


def compare_scaling(model: torch.nn.Module, tokenizer: Any, text: str) -> ScalingComparison:
    """Trace `model` on `text` twice (inference only): with scaled scores, and with
    InferenceOptions(scale_scores=False). Works for GPT and Seq2Seq models.

    Raises transformer_core.errors.InputError for unusable text (empty, too long).
    """
    results: dict[str, Any] = {}
    for tag, scale in (("scaled", True), ("unscaled", False)):
        opts = InferenceOptions(scale_scores=scale)
        if model.config.arch == "gpt":
            tr = trace_gpt(model, tokenizer, text, opts)
            q = {"self": tr.tokens}
            results[tag] = (tr.attention, q, q, "", tr.unknown)
        else:
            tr = trace_seq2seq(model, tokenizer, text, opts)
            src, tgt = tr.source_tokens, tr.target_tokens
            q = {"encoder_self": src, "decoder_self": tgt, "cross": tgt}
            k = {"encoder_self": src, "decoder_self": tgt, "cross": src}
            results[tag] = (tr.attention, q, k, tr.output, tr.unknown)
    return ScalingComparison(
        scaled=results["scaled"][0],
        unscaled=results["unscaled"][0],
        query_tokens={t: r[1] for t, r in results.items()},
        key_tokens={t: r[2] for t, r in results.items()},
        output={t: r[3] for t, r in results.items()},
        stats={t: {kind: attention_sharpness(a) for kind, a in r[0].items()} for t, r in results.items()},
        unknown=results["scaled"][4],
    )


# --------------------------------------------------------------------------------------
# Positional encodings
# --------------------------------------------------------------------------------------


def sinusoid_table(positions: ArrayLike, d_model: int) -> np.ndarray:
    """(T, d_model) sinusoidal codes in float64 for any (even negative) positions (T,).

    Same formula as positional.sinusoidal_positional_encoding (which is float32 and starts
    at 0); float64 keeps exact identity checks at the 1e-12 level.
    """
    p = np.asarray(positions, dtype=np.float64)[:, None]
    omega = 1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)
    angle = p * omega[None, :]
    table = np.zeros((p.shape[0], d_model))
    table[:, 0::2] = np.sin(angle)
    table[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return table


def sinusoidal_table(num_positions: int, d_model: int) -> np.ndarray:
    """(num_positions, d_model) the model's sinusoidal table (float32, from positional)."""
    return sinusoidal_positional_encoding(num_positions, d_model).numpy()


def cosine_similarity_matrix(table: ArrayLike) -> np.ndarray:
    """(P, P) cosine similarity between every pair of rows of table (P, d)."""
    t = np.asarray(table, dtype=np.float64)
    unit = t / np.maximum(np.linalg.norm(t, axis=-1, keepdims=True), 1e-12)
    return unit @ unit.T


def adjacent_similarity(table: ArrayLike) -> np.ndarray:
    """(P - 1,) cosine similarity of row p and row p + 1 of table (P, d)."""
    t = np.asarray(table, dtype=np.float64)
    unit = t / np.maximum(np.linalg.norm(t, axis=-1, keepdims=True), 1e-12)
    return (unit[:-1] * unit[1:]).sum(-1)


@dataclass(frozen=True)
class ShiftCheck:
    rotation: np.ndarray  # (d, d) block-diagonal M with PE(p + offset) = M PE(p)
    max_abs_error: float  # max over p in 0..P-1 and all dims of |M PE(p) - PE(p + offset)|


def shift_check(num_positions: int, d_model: int, offset: int) -> ShiftCheck:
    """Check the linear-shift property of sinusoidal codes for one offset (float64)."""
    m = shift_rotation(offset, d_model).numpy()
    positions = np.arange(num_positions)
    here, there = sinusoid_table(positions, d_model), sinusoid_table(positions + offset, d_model)
    return ShiftCheck(m, float(np.abs(here @ m.T - there).max()))


def rope_frequency(d_head: int, pair: int) -> float:
    """Radians per position by which RoPE turns pair `pair` (dims 2*pair, 2*pair+1)."""
    cos, sin = rope_angles(torch.tensor([1]), d_head)
    return float(torch.atan2(sin[0, pair], cos[0, pair]))


def rope_pair_path(vector: ArrayLike, positions: ArrayLike, d_head: int, pair: int) -> np.ndarray:
    """(T, 2): a 2-D vector placed in pair `pair` of a d_head vector, rotated by RoPE at
    each position (T,)."""
    if not 0 <= pair < d_head // 2:
        raise ValueError(f"pair must be in 0..{d_head // 2 - 1}, got {pair}")
    pos = torch.as_tensor(np.asarray(positions), dtype=torch.long)
    x = torch.zeros(len(pos), d_head)
    x[:, 2 * pair : 2 * pair + 2] = torch.as_tensor(np.asarray(vector, dtype=np.float32))
    rotated = apply_rope(x, *rope_angles(pos, d_head))
    return rotated[:, 2 * pair : 2 * pair + 2].double().numpy()


def rope_scores(q: ArrayLike, k: ArrayLike, position_pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """(n,) q.k after RoPE puts q at position m and k at position n, for each (m, n).

    q, k (d_head,) with d_head even. Pairs with the same m - n give the same score.
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
    """(n,) (q + PE(m)).(k + PE(n)) with added sinusoidal codes: for contrast with RoPE,
    these change with the absolute positions even when m - n is fixed."""
    qa, ka = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    m = sinusoid_table([a for a, _ in position_pairs], qa.size)
    n = sinusoid_table([b for _, b in position_pairs], ka.size)
    return ((qa + m) * (ka + n)).sum(-1)


@dataclass(frozen=True)
class AlibiDemo:
    slopes: np.ndarray  # (H,)
    bias: np.ndarray  # (H, T, T) -slope * |i - j|
    mask: np.ndarray  # (T, T) causal, True = may attend
    scores: np.ndarray  # (T, T) content scores before the bias
    weights: np.ndarray  # (H, T, T) masked softmax(scores + bias)


def alibi_demo(n_heads: int, length: int, *, content: float = 1.0, seed: int = 0) -> AlibiDemo:
    """ALiBi on a causal score matrix: random content scores (std `content`; 0 gives
    equal content so only the distance bias shapes the weights) plus each head's bias."""
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(length, length, generator=gen) * content
    slopes = alibi_slopes(n_heads)
    pos = torch.arange(length)
    bias = alibi_bias(slopes, pos, pos)
    mask = causal_mask(length)
    weights = masked_softmax(scores[None] + bias, mask)
    return AlibiDemo(slopes.numpy(), bias.numpy(), mask.numpy(), scores.numpy(), weights.numpy())


def learned_position_table(model: torch.nn.Module) -> np.ndarray:
    """(max_len, d_model) the trained position table of a model with learned positions
    (a Seq2Seq model: its encoder's table). Raises ValueError for other schemes."""
    if model.config.positions != "learned":
        raise ValueError(f"this model uses {model.config.positions!r} positions, not a learned table")
    scheme = model.positions if model.config.arch == "gpt" else model.src_positions
    return scheme.table.weight.detach().float().cpu().numpy()


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


# --------------------------------------------------------------------------------------
# Training signals
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Schedules:
    steps: np.ndarray  # (n,) 1..total
    vaswani: np.ndarray  # (n,) d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
    cosine: np.ndarray  # (n,) linear warm-up then cosine, peaking at the Vaswani peak


def lr_schedules(d_model: int, warmup: int, total: int, min_ratio: float = 0.1) -> Schedules:
    """Both schedules over steps 1..total; the cosine one reaches the Vaswani peak."""
    steps = np.arange(1, total + 1)
    vas = np.array([vaswani_lr(int(s), d_model, warmup) for s in steps])
    peak = vaswani_lr(warmup, d_model, warmup)
    cos = np.array([warmup_cosine_lr(int(s) - 1, peak, warmup, total, min_ratio) for s in steps])
    return Schedules(steps, vas, cos)


@dataclass(frozen=True)
class SmoothedTarget:
    distribution: np.ndarray  # (V,) what the loss pulls the prediction towards
    target_mass: float  # probability left on the true class
    loss_floor: float  # entropy of the distribution: the lowest cross-entropy possible, nats


def smoothed_target(num_classes: int, target: int, smoothing: float) -> SmoothedTarget:
    """Label-smoothed target (as torch's cross_entropy(label_smoothing=eps) defines it)."""
    if not 0 <= target < num_classes:
        raise ValueError(f"target must be in 0..{num_classes - 1}, got {target}")
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")
    dist = np.asarray(label_smoothing_target(num_classes, target, smoothing))
    return SmoothedTarget(dist, float(dist[target]), float(entropy(dist)))
