"""The lesson pages' numbers and charts that take more than a blink, shared by every run and user:
each a pure function of the `lessons` package (or a small gathering of them, or a chart drawn from
them) cached by its arguments, or by the weights of the model it reads."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import torch

from attention_lab.lesson_pages import lesson_charts, position_charts
from attention_lab.lessons import basics, cost, positions, tokens, training, variance
from attention_lab.models.compute import model_device, shared_cache, weights_sha256
from attention_lab.models.resources import load_model
from transformer_core import CheckpointError, sinusoidal_positional_encoding
from transformer_core import cost as counts
from transformer_core.io import Checkpoint
from transformer_core.models import count_parameters


@shared_cache
def kernels(house: float, sigma: float, width: float) -> dict[str, dict[str, np.ndarray] | np.ndarray]:
    """/basics section 4: the Gaussian (sigma) and boxcar (width) kernel regressions at one house
    ("fits") and as curves over `grid` ("curves")."""
    grid = np.linspace(0.0, 11.0, 221)
    widths = {"gaussian": sigma, "boxcar": width}
    locations, prices = basics.HOUSE_LOCATIONS, basics.HOUSE_PRICES
    return {
        "fits": {k: basics.kernel_regression(house, locations, prices, k, w) for k, w in widths.items()},
        "grid": grid,
        "curves": {
            k: basics.kernel_regression_curve(grid, locations, prices, k, w) for k, w in widths.items()
        },
    }


@shared_cache
def sinusoids(length: int, d_model: int) -> dict[str, np.ndarray]:
    """/positions section 1: the sinusoidal table (length, d_model), the cosine similarity of every
    pair of positions and of neighbours."""
    table = sinusoidal_positional_encoding(length, d_model, dtype=torch.float64).numpy()
    return {
        "table": table,
        "cos": positions.cosine_similarity_matrix(table),
        "adjacent": positions.adjacent_similarity(table),
    }


@shared_cache
def shift(length: int, d_model: int, offset: int) -> tuple[positions.ShiftCheck, int, np.ndarray]:
    """/positions section 2: the check over `length` positions, and one example p with PE(p),
    PE(p + offset) (2, d_model)."""
    p = max(min(10, length - 1), -offset)
    table = sinusoidal_positional_encoding(p + max(offset, 0) + 1, d_model, dtype=torch.float64).numpy()
    return positions.shift_check(length, d_model, offset), p, table[[p, p + offset]]


@shared_cache
def rope_table(offset: int) -> pd.DataFrame:
    """/positions section 3: RoPE's score of one q, k pair at several positions `offset` apart
    (equal: it depends on the offset alone) beside the added sinusoids' (it does not)."""
    q, k = positions.ROPE_Q, positions.ROPE_K
    pairs = [(n + offset, n) for n in positions.ROPE_STARTS if n + offset >= 0]
    return pd.DataFrame(
        {
            "query position m": [m for m, _ in pairs],
            "key position n": [n for _, n in pairs],
            "offset m − n": [m - n for m, n in pairs],
            "RoPE score": positions.rope_scores(q, k, pairs),
            "added sinusoid score": positions.absolute_scores(q, k, pairs),
        }
    )


score_samples = shared_cache(variance.score_samples, max_entries=32)


@shared_cache
def score_histograms(d_k: int, n_samples: int) -> lesson_charts.Spec:
    """/variance section 1: the histograms of score_samples' draw, cached by (d_k, n) rather than
    by the draw's 2n floats, which a cache would hash on every run."""
    raw, scaled = score_samples(d_k, n_samples)
    return lesson_charts.score_histograms(raw, scaled, d_k)


@functools.partial(shared_cache, max_entries=512)
def score_variance(d_k: int, n_samples: int, seed: int = 0) -> tuple[float, float]:
    """A row of /variance's table (two floats), from score_samples' cache: the slider's row is
    the histogram's own draw, so a new d_k or n draws one row, not the table's five."""
    return variance.score_variance(d_k, n_samples, seed, draw=score_samples)


@functools.partial(shared_cache, max_entries=32)
def score_variance_table(dims: tuple[int, ...], n_samples: int) -> variance.VarianceTable:
    """/variance section 1: the measured variance for each d_k in dims, row by row from score_variance."""
    return variance.score_variance_table(dims, n_samples, row=score_variance)


lr_schedules = shared_cache(training.lr_schedules, max_entries=32)


@shared_cache
def saturation(n_keys: int) -> variance.Saturation:
    """/variance section 2: how one-hot the softmax turns at each of its d_k (SATURATION_DIMS)."""
    return variance.softmax_saturation(variance.SATURATION_DIMS, n_keys, n_rows=128)


parameter_counts = shared_cache(counts.parameter_counts, max_entries=64)
block_trace = shared_cache(basics.block_trace, max_entries=32)
cost_curves = shared_cache(cost.curves, max_entries=64)


def t5_bias_charts(name: str, span: int) -> dict[str, lesson_charts.Spec]:
    """/positions section 5: each T5 stack of the model `name` (encoder, decoder or GPT) and its
    heads' learned bias at every distance a query `span` positions long sees, drawn. Cached by the
    weights, not the name (an installed model can be imported anew), in a cache of its own: a
    dragged span slider does not push the explorers' views out of theirs. CheckpointError as
    load_model."""
    ckpt = load_model(name)
    return _t5_bias_charts(weights=f"{weights_sha256(ckpt)} {model_device(ckpt)}", span=span, _ckpt=ckpt)


@functools.partial(shared_cache, max_entries=32)
def _t5_bias_charts(weights: str, span: int, _ckpt: Checkpoint) -> dict[str, lesson_charts.Spec]:
    """t5_bias_charts, keyed by `weights` and span (Streamlit leaves `_ckpt` out of the key)."""
    return {
        where: position_charts.t5_bias_chart(positions.t5_head_biases(scheme, span), where)
        for where, scheme in positions.t5_schemes(_ckpt.model).items()
    }


@shared_cache
def baseline_counts(names: tuple[str, ...]) -> list[tuple[str, int | None]]:
    """/cost: each shipped model's parameter count, None where it cannot be loaded."""
    out: list[tuple[str, int | None]] = []
    for name in names:
        try:
            out.append((name, count_parameters(load_model(name).model)))
        except CheckpointError:
            out.append((name, None))
    return out


corpus_bpe = shared_cache(tokens.corpus_bpe)


@shared_cache
def token_split(text: str, checkpoint: str) -> tokens.Split:
    """/basics section 8: `text` through `checkpoint`'s character tokenizer and the corpus BPE."""
    return tokens.split(text, load_model(checkpoint).tokenizer, corpus_bpe())
