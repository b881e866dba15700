"""attention_lab.lessons.variance: score variance ~ d_k, softmax saturation, a model without the scaling."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attention_lab.lessons import variance as lesson
from transformer_core.errors import InputError
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.io.tokenizer import CharTokenizer


def test_score_variance_about_d_and_one() -> None:
    t = lesson.score_variance_table([4, 16, 64, 256], 5000, seed=0)
    np.testing.assert_allclose(t.raw, t.dims, rtol=0.1)
    np.testing.assert_allclose(t.scaled, 1.0, rtol=0.1)
    raw, scaled = lesson.score_samples(64, 100, seed=3)
    np.testing.assert_allclose(scaled, raw / 8.0)
    assert np.array_equal(raw, lesson.score_samples(64, 100, seed=3)[0])  # seeded


def test_the_table_is_each_rows_draw_and_a_row_can_come_from_a_cache() -> None:
    """Row by row: each d_k's variance is that of score_samples' own draw, bit for bit, and a
    table given a cached row draws only the rows its cache lacks."""
    dims, n = (4, 16, 37), 700
    table = lesson.score_variance_table(dims, n)
    for i, d in enumerate(dims):
        raw, scaled = lesson.score_samples(d, n)
        assert table.raw[i] == raw.var() and table.scaled[i] == scaled.var()
    drawn: list[int] = []
    kept: dict[tuple[int, int, int], tuple[float, float]] = {}

    def counted(d_k: int, n_samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        drawn.append(d_k)
        return lesson.score_samples(d_k, n_samples, seed)

    def cached(d_k: int, n_samples: int, seed: int) -> tuple[float, float]:
        if (d_k, n_samples, seed) not in kept:
            kept[d_k, n_samples, seed] = lesson.score_variance(d_k, n_samples, seed, draw=counted)
        return kept[d_k, n_samples, seed]

    first = lesson.score_variance_table(dims, n, row=cached)
    second = lesson.score_variance_table((4, 16, 99), n, row=cached)
    assert drawn == [4, 16, 37, 99]  # the moved slider's row alone
    assert np.array_equal(first.raw, table.raw) and np.array_equal(first.scaled, table.scaled)
    assert second.raw[:2].tolist() == table.raw[:2].tolist()
    assert second.raw[2] == lesson.score_samples(99, n)[0].var()


def test_softmax_jacobian_norm_matches_autograd() -> None:
    scores = torch.tensor([0.3, -1.2, 2.0, 0.5], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
    p = torch.softmax(scores, -1).numpy()
    assert lesson.softmax_jacobian_norm(p) == pytest.approx(float(jac.norm()), rel=1e-10)
    assert lesson.softmax_jacobian_norm([1.0, 0.0, 0.0]) == pytest.approx(0.0)


def test_entropy() -> None:
    assert lesson.entropy([0.25] * 4) == pytest.approx(math.log(4))
    assert lesson.entropy([1.0, 0.0]) == 0.0
    np.testing.assert_allclose(lesson.entropy([[0.5, 0.5], [1.0, 0.0]]), [math.log(2), 0.0])


def test_softmax_saturates_without_scaling() -> None:
    s = lesson.softmax_saturation([1, 16, 256], n_keys=16, n_rows=128)
    assert s.entropy_raw[0] == pytest.approx(s.entropy_scaled[0])  # d_k = 1: same thing
    assert s.entropy_raw[-1] < 0.5 * s.entropy_scaled[-1]
    assert s.max_raw[-1] > 0.8 > 0.4 > s.max_scaled[-1]
    assert s.grad_raw[-1] < 0.5 * s.grad_scaled[-1]
    assert np.ptp(s.entropy_scaled) < 0.3  # scaled rows keep their shape as d_k grows
    row = lesson.softmax_row(256, 16)
    assert row.raw_weights.max() > row.scaled_weights.max()
    np.testing.assert_allclose(row.raw_weights.sum(), 1.0)


def test_attention_sharpness() -> None:
    w = np.zeros((1, 1, 3, 2))
    w[0, 0, 0] = [1.0, 0.0]
    w[0, 0, 1] = [0.5, 0.5]  # row 2 is all zero: skipped
    s = lesson.attention_sharpness(w)
    assert s.mean_max_weight == pytest.approx(0.75)
    assert s.mean_entropy == pytest.approx(math.log(2) / 2)
    assert math.isnan(lesson.attention_sharpness(np.zeros((2, 2))).mean_max_weight)


def test_compare_scaling_sharpens_heads(make_gpt, make_seq2seq) -> None:
    tok = CharTokenizer("abcdefghijkl")  # 12 chars + 4 specials = 16 = the tiny models' vocab
    gpt = lesson.compare_scaling(Checkpoint("tiny-gpt", make_gpt("rope"), tok, {}), "abcabc")
    assert set(gpt.scaled) == {"self"} and gpt.scaled["self"].shape == (2, 2, 6, 6)
    assert gpt.output == {"scaled": "", "unscaled": ""}
    s, u = gpt.stats["scaled"]["self"], gpt.stats["unscaled"]["self"]
    assert u.mean_max_weight > s.mean_max_weight and u.mean_entropy < s.mean_entropy
    s2s = lesson.compare_scaling(Checkpoint("tiny-s2s", make_seq2seq("sinusoidal"), tok, {}), "abcz")
    assert set(s2s.scaled) == {"encoder_self", "decoder_self", "cross"}
    assert s2s.unknown == [(3, "z")]
    assert s2s.query_tokens["scaled"]["encoder_self"][-1] == "<eos>"
    with pytest.raises(InputError):
        lesson.compare_scaling(Checkpoint("tiny-gpt", make_gpt(), tok, {}), "")
