"""Why divide by sqrt(d_k) (/variance): score variance, softmax saturation, and a trained
model run without the scaling.

Scores go through `transformer_core.attention`, traces through `transformer_core.interp`;
this module measures what they produce.

Shapes: n samples or dimensions, m keys, L layers, H heads (n_heads), Tq queries, Tk keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from transformer_core import InferenceOptions, attention_scores, masked_softmax
from transformer_core.interp import trace_gpt, trace_seq2seq
from transformer_core.io import Checkpoint

ArrayLike = Sequence[float] | np.ndarray

#: d_k rows of the measured-variance table; the page adds the slider's d_k
TABLE_DIMS = (4, 16, 64, 256)
#: d_k values along the saturation curves (log axis)
SATURATION_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def entropy(weights: ArrayLike, axis: int = -1) -> np.ndarray:
    """Shannon entropy in nats of distributions along `axis` (0 log 0 counts as 0): how
    spread out an attention row is, ln m for uniform over m keys, 0 for one-hot."""
    p = np.asarray(weights, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(axis=axis)


# --------------------------------------------------------------------------------------
# Dot products grow with d_k
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


Draw = Callable[[int, int, int], tuple[np.ndarray, np.ndarray]]  # score_samples or a cache of it
Row = Callable[[int, int, int], tuple[float, float]]  # score_variance or a cache of it


def score_variance(
    d_k: int, n_samples: int, seed: int = 0, draw: Draw = score_samples
) -> tuple[float, float]:
    """(raw, scaled): the population variance of q.k and of q.k / sqrt(d_k) over the n pairs
    `draw` gives (one row of the table)."""
    raw, scaled = draw(d_k, n_samples, seed)
    return float(raw.var()), float(scaled.var())


def score_variance_table(
    dims: Sequence[int],
    n_samples: int,
    seed: int = 0,
    row: Row = score_variance,
) -> VarianceTable:
    """Measured variance of raw and scaled dot products for each d_k in dims (n,): the
    evidence for "variance ~ d_k, and ~ 1 after the scaling". `row`: score_variance or a
    cache of it, so that a page whose slider moves draws its new row alone."""
    rows = [row(int(d), n_samples, seed) for d in dims]
    return VarianceTable(np.asarray(dims), np.array([r for r, _ in rows]), np.array([s for _, s in rows]))


# --------------------------------------------------------------------------------------
# Wide scores saturate the softmax
# --------------------------------------------------------------------------------------


def softmax_jacobian_norm(weights: ArrayLike) -> np.ndarray:
    """Frobenius norm (...,) of d softmax / d scores = diag(p) - p p^T for each row p (..., m).

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
    """One query against n_keys random keys (unit-variance entries) in d_k dimensions:
    a single row to look at, unscaled next to scaled."""
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
    """How sharp softmax rows get as d_k grows: for each d_k in dims (n,), n_rows queries,
    each against n_keys keys, summarised by entropy, largest weight and gradient norm."""
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


# --------------------------------------------------------------------------------------
# A trained model without the scaling
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sharpness:
    mean_max_weight: float  # average over query rows of the largest weight
    mean_entropy: float  # average over query rows, nats


def attention_sharpness(weights: ArrayLike) -> Sharpness:
    """Mean max weight and mean entropy over every row of weights (..., Tq, Tk): how close
    to one-hot a model's heads are. Rows that are all zero (a query that may attend to
    nothing) are left out."""
    w = np.asarray(weights, dtype=np.float64)
    rows = w.reshape(-1, w.shape[-1])
    rows = rows[rows.sum(-1) > 0]
    if rows.size == 0:
        return Sharpness(float("nan"), float("nan"))
    return Sharpness(float(rows.max(-1).mean()), float(entropy(rows).mean()))


@dataclass(frozen=True)
class ScalingComparison:
    """One model on one text, with and without the 1/sqrt(d_k) on its scores.

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


def compare_scaling(ckpt: Checkpoint, text: str) -> ScalingComparison:
    """Trace a checkpoint's model on `text` twice (inference only, weights untouched): with
    scaled scores, and with InferenceOptions(scale_scores=False). Works for GPT and Seq2Seq
    models; the signature is the one `attention_lab.models.compute.run_cached` caches.

    Raises transformer_core.errors.InputError for unusable text (empty, too long).
    """
    model, tokenizer = ckpt.model, ckpt.tokenizer
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
