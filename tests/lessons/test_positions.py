"""lessons.positions: the exact shift property, RoPE's relative scores, ALiBi, learned tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attention_lab.lessons import positions as lesson
from transformer_core.positional import sinusoidal_positional_encoding


def float64_table(num_positions: int, d_model: int) -> np.ndarray:
    return sinusoidal_positional_encoding(num_positions, d_model, dtype=torch.float64).numpy()


def test_sinusoid_table_matches_core_and_shift_is_exact() -> None:
    core = sinusoidal_positional_encoding(40, 16).numpy()
    np.testing.assert_allclose(float64_table(40, 16), core, atol=1e-5)
    np.testing.assert_allclose(float64_table(4, 8)[1, :2], [math.sin(1), math.cos(1)], atol=1e-6)
    for offset in (-7, 0, 1, 5, 25):
        check = lesson.shift_check(50, 64, offset)
        assert check.max_abs_error < 1e-6
        assert check.max_abs_error < 1e-12  # float64: exact up to rounding
        assert check.rotation.shape == (64, 64)
        assert check.first == max(0, -offset)  # the checked p keep p + offset >= 0
    assert lesson.shift_check(256, 256, -25).max_abs_error < 1e-12
    with pytest.raises(ValueError):
        lesson.shift_check(10, 7, 1)


def test_cosine_similarity() -> None:
    table = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]])
    expected = [[1, 0, -1], [0, 1, 0], [-1, 0, 1]]
    np.testing.assert_allclose(lesson.cosine_similarity_matrix(table), expected, atol=1e-12)
    np.testing.assert_allclose(lesson.adjacent_similarity(table), [0.0, 0.0], atol=1e-12)
    pe = float64_table(50, 64)
    adj = lesson.adjacent_similarity(pe)
    assert adj.min() > 0.8 and np.ptp(adj) < 1e-4  # neighbours alike, the same at every p


def test_rope_equal_offsets_give_equal_scores() -> None:
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal(16), rng.standard_normal(16)
    same = lesson.rope_scores(q, k, [(3, 0), (8, 5), (53, 50), (103, 100)])
    assert np.ptp(same) < 1e-4
    other = lesson.rope_scores(q, k, [(3, 0), (4, 0)])
    assert abs(other[0] - other[1]) > 1e-3
    assert lesson.rope_scores(q, k, [(0, 0)])[0] == pytest.approx(float(q @ k), rel=1e-5)
    absolute = lesson.absolute_scores(q, k, [(3, 0), (8, 5), (53, 50)])
    assert np.ptp(absolute) > 0.1  # added codes do depend on the absolute positions


def test_rope_pair_path_rotates() -> None:
    path = lesson.rope_pair_path([1.0, 0.0], [0, 1, 2], d_head=16, pair=0)
    expected = [[1, 0], [math.cos(1), math.sin(1)], [math.cos(2), math.sin(2)]]
    np.testing.assert_allclose(path, expected, atol=1e-6)
    assert lesson.rope_frequency(16, 0) == pytest.approx(1.0, rel=1e-6)
    assert lesson.rope_frequency(16, 1) == pytest.approx(10000 ** (-2 / 16), rel=1e-5)
    norms = np.linalg.norm(lesson.rope_pair_path([0.3, -0.4], range(10), 16, 3), axis=1)
    np.testing.assert_allclose(norms, 0.5, atol=1e-6)
    with pytest.raises(ValueError):
        lesson.rope_pair_path([1.0, 0.0], [0], 16, 8)


def test_alibi_demo() -> None:
    demo = lesson.alibi_demo(8, 6, content=0.0)
    np.testing.assert_allclose(demo.slopes, [2.0 ** -(i + 1) for i in range(8)])
    assert demo.bias.shape == (8, 6, 6)
    assert demo.bias[0, 5, 2] == pytest.approx(-0.5 * 3)
    assert (demo.weights[:, 0, 1:] == 0).all()  # causal: the first query sees only itself
    np.testing.assert_allclose(demo.weights.sum(-1), 1.0, atol=1e-6)
    # equal content: weight falls with distance, faster for steeper heads
    assert demo.weights[0, 5, 5] > demo.weights[0, 5, 0]
    assert demo.weights[0, 5, 5] > demo.weights[7, 5, 5]
    assert len(lesson.alibi_demo(6, 4).slopes) == 6


def test_learned_table_and_positions_seen(make_gpt, make_seq2seq) -> None:
    gpt = make_gpt("learned")
    table = lesson.learned_position_table(gpt)
    assert table.shape == (16, 16)
    np.testing.assert_array_equal(table, gpt.positions.table.weight.detach().numpy())
    s2s = make_seq2seq("learned")
    encoder_table = s2s.src_positions.table.weight.detach().numpy()
    np.testing.assert_array_equal(lesson.learned_position_table(s2s), encoder_table)
    with pytest.raises(ValueError, match="learned"):
        lesson.learned_position_table(make_gpt("rope"))
    assert lesson.positions_seen_in_training({"task": "reverse", "train_args": {"max_len": 10}}) == 11
    assert lesson.positions_seen_in_training({"task": "lm", "train_args": {"block_size": 128}}) == 128
    assert lesson.positions_seen_in_training({"task": "lm"}) is None


def test_t5_buckets_and_biases_are_the_models_own() -> None:
    """The bucket map and each head's bias by distance read the trained scheme exactly as its
    forward pass adds them (T5Positions.buckets and .bias over the same positions)."""
    from transformer_core.io.checkpoint import load_checkpoint

    model = load_checkpoint("reverse-t5").model
    schemes = lesson.t5_schemes(model)
    assert set(schemes) == {"encoder", "decoder"}
    pos = torch.arange(20)
    for where, scheme in schemes.items():
        both_ways = where == "encoder"
        expected = scheme.buckets(pos, pos).numpy()
        np.testing.assert_array_equal(lesson.t5_bucket_map(20, both_ways, model.config.max_len), expected)
        biases = lesson.t5_head_biases(scheme, 20)
        added = scheme.bias(pos, pos).detach().numpy()  # (H, Tq, Tk)
        for d, column in zip(biases.distances, biases.bias.T, strict=True):
            i, j = (0, d) if d >= 0 else (-d, 0)  # query i, key j = i + d
            np.testing.assert_allclose(column, added[:, i, j], atol=1e-7)
        assert biases.distances.max() == (19 if both_ways else 0)
    bucket = lesson.t5_bucket_map(8, True, 32)
    assert (np.diag(bucket) == 0).all() and bucket[0, 1] == 17 and bucket[1, 0] == 1  # after: 16 + 1
