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
