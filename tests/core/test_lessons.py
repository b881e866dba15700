"""The lesson computations against the worked numbers of the teaching material."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import lessons as L
from transformer_core.errors import InputError
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.positional import sinusoidal_positional_encoding


def test_qkv_toy_weights_and_context() -> None:
    r = L.retrieve(L.QKV_QUERY, L.QKV_KEYS, L.QKV_VALUES)
    np.testing.assert_allclose(r.scores, [0.0, 1.5, 3.0, 4.5])
    np.testing.assert_allclose(r.weights, [0.0087, 0.0388, 0.1738, 0.7788], atol=5e-5)
    np.testing.assert_allclose(r.context, [0.5718, 0.6019], atol=5e-5)
    assert r.weights.sum() == pytest.approx(1.0)


def test_retrieve_scale_and_shape_check() -> None:
    scaled = L.retrieve([1.0, 1.0], [[1.0, 0.0], [0.0, 2.0]], [[1.0], [2.0]], scale=0.5)
    np.testing.assert_allclose(scaled.scores, [0.5, 1.0])
    with pytest.raises(ValueError, match="features"):
        L.retrieve([1.0, 2.0], L.QKV_KEYS, L.QKV_VALUES)


def test_masked_rows_zero_padding_and_renormalise() -> None:
    plain, masked = L.masked_rows(L.PADDED_SCORES, L.PADDED_VALID_LENS)
    np.testing.assert_allclose(
        plain, [[0.6103, 0.2245, 0.0826, 0.0826], [0.1770, 0.5317, 0.1602, 0.1311]], atol=5e-5
    )
    np.testing.assert_allclose(masked, [[0.7311, 0.2689, 0.0, 0.0], [0.2037, 0.6120, 0.1843, 0.0]], atol=5e-5)
    assert masked[0, 2] == 0.0 and masked[0, 3] == 0.0 and masked[1, 3] == 0.0  # exactly zero
    np.testing.assert_allclose(masked.sum(-1), 1.0)
    np.testing.assert_array_equal(L.valid_length_mask([1, 4], 4), [[True, False, False, False], [True] * 4])


def test_kernel_regression_house_prices() -> None:
    g = L.kernel_regression(L.HOUSE_QUERY, L.HOUSE_LOCATIONS, L.HOUSE_PRICES, "gaussian", 1.0)
    b = L.kernel_regression(L.HOUSE_QUERY, L.HOUSE_LOCATIONS, L.HOUSE_PRICES, "boxcar", 1.0)
    assert round(g.prediction, 3) == 103.753
    assert round(b.prediction, 3) == 120.0
    np.testing.assert_allclose(g.weights, g.similarity / g.similarity.sum())
    np.testing.assert_array_equal(b.similarity, [0, 1, 0, 0, 0, 0])


def test_kernel_regression_edges() -> None:
    far = L.kernel_regression(1000.0, L.HOUSE_LOCATIONS, L.HOUSE_PRICES, "gaussian", 0.1)
    assert far.prediction == pytest.approx(130.0)  # nearest house wins; no 0/0 underflow
    empty = L.kernel_regression(7.5, L.HOUSE_LOCATIONS, L.HOUSE_PRICES, "boxcar", 1.0)
    assert math.isnan(empty.prediction)
    wide = L.kernel_regression(2.0, L.HOUSE_LOCATIONS, L.HOUSE_PRICES, "gaussian", 1e4)
    assert wide.prediction == pytest.approx(np.mean(L.HOUSE_PRICES), rel=1e-6)
    curve = L.kernel_regression_curve([2.0, 7.5], L.HOUSE_LOCATIONS, L.HOUSE_PRICES, "boxcar", 1.0)
    assert curve[0] == 120.0 and math.isnan(curve[1])
    with pytest.raises(ValueError):
        L.kernel_similarity(0.0, [1.0], "gaussian", 0.0)
    with pytest.raises(ValueError):
        L.kernel_similarity(0.0, [1.0], "triangle", 1.0)  # type: ignore[arg-type]


def test_matrix_attention_batched_example() -> None:
    m = L.matrix_attention(L.BATCH_Q, L.BATCH_K, L.BATCH_V)
    assert m.weights.shape == (2, 2, 4) and m.outputs.shape == (2, 2, 2)
    np.testing.assert_allclose(
        m.weights,
        [
            [[0.3349, 0.1651, 0.3349, 0.1651], [0.1543, 0.3130, 0.3130, 0.2198]],
            [[0.0035, 0.0017, 0.0017, 0.9931], [0.0515, 0.0254, 0.0515, 0.8716]],
        ],
        atol=5e-5,
    )
    np.testing.assert_allclose(
        m.outputs, [[[5.3534, 4.6466], [3.5475, 6.4525]], [[8.9449, 8.9449], [7.9987, 7.9464]]], atol=2e-4
    )
    np.testing.assert_allclose(m.scores[0, 0], [1 / math.sqrt(2), 0, 1 / math.sqrt(2), 0])


def test_split_heads_see_different_coordinates() -> None:
    hs = L.split_heads(L.SPLIT_X, 2)
    np.testing.assert_allclose(
        hs.weights[0],
        [
            [0.7346, 0.1786, 0.0434, 0.0434],
            [0.4022, 0.4022, 0.0978, 0.0978],
            [0.25] * 4,
            [0.25] * 4,
        ],
        atol=5e-5,
    )
    np.testing.assert_allclose(
        hs.weights[1],
        [
            [0.25] * 4,
            [0.25] * 4,
            [0.0434, 0.0434, 0.7346, 0.1786],
            [0.0978, 0.0978, 0.4022, 0.4022],
        ],
        atol=5e-5,
    )
    np.testing.assert_allclose(hs.concat[0], [1.6477, 0.1786, 0.75, 0.25], atol=5e-5)
    assert hs.columns == [(0, 2), (2, 4)]
    one = L.split_heads(L.SPLIT_X, 1)
    whole = L.matrix_attention([L.SPLIT_X], [L.SPLIT_X], [L.SPLIT_X])
    np.testing.assert_allclose(one.weights[0], whole.weights[0])
    with pytest.raises(ValueError):
        L.split_heads(L.SPLIT_X, 3)


def test_permutation_equivariance_and_positions_break_it() -> None:
    x = np.random.default_rng(0).standard_normal((4, 4))
    plain = L.permutation_check(x, [2, 0, 1, 3])
    assert plain.max_abs_diff < 1e-12
    np.testing.assert_allclose(plain.shuffled_output, plain.output[[2, 0, 1, 3]], atol=1e-12)
    with_pos = L.permutation_check(x, [2, 0, 1, 3], add_positions=True)
    assert with_pos.max_abs_diff > 1e-3
    assert L.permutation_check(x, [0, 1, 2, 3], add_positions=True).max_abs_diff < 1e-12
    with pytest.raises(ValueError):
        L.permutation_check(x, [0, 0, 1, 2])


def test_score_variance_about_d_and_one() -> None:
    t = L.score_variance_table([4, 16, 64, 256], 5000, seed=0)
    np.testing.assert_allclose(t.raw, t.dims, rtol=0.1)
    np.testing.assert_allclose(t.scaled, 1.0, rtol=0.1)
    raw, scaled = L.score_samples(64, 100, seed=3)
    np.testing.assert_allclose(scaled, raw / 8.0)
    assert np.array_equal(raw, L.score_samples(64, 100, seed=3)[0])  # seeded


def test_softmax_jacobian_norm_matches_autograd() -> None:
    scores = torch.tensor([0.3, -1.2, 2.0, 0.5], dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores)
    p = torch.softmax(scores, -1).numpy()
    assert L.softmax_jacobian_norm(p) == pytest.approx(float(jac.norm()), rel=1e-10)
    assert L.softmax_jacobian_norm([1.0, 0.0, 0.0]) == pytest.approx(0.0)


def test_entropy() -> None:
    assert L.entropy([0.25] * 4) == pytest.approx(math.log(4))
    assert L.entropy([1.0, 0.0]) == 0.0
    np.testing.assert_allclose(L.entropy([[0.5, 0.5], [1.0, 0.0]]), [math.log(2), 0.0])


def test_softmax_saturates_without_scaling() -> None:
    s = L.softmax_saturation([1, 16, 256], n_keys=16, n_rows=128)
    assert s.entropy_raw[0] == pytest.approx(s.entropy_scaled[0])  # d_k = 1: same thing
    assert s.entropy_raw[-1] < 0.5 * s.entropy_scaled[-1]
    assert s.max_raw[-1] > 0.8 > 0.4 > s.max_scaled[-1]
    assert s.grad_raw[-1] < 0.5 * s.grad_scaled[-1]
    assert np.ptp(s.entropy_scaled) < 0.3  # scaled rows keep their shape as d_k grows
    row = L.softmax_row(256, 16)
    assert row.raw_weights.max() > row.scaled_weights.max()
    np.testing.assert_allclose(row.raw_weights.sum(), 1.0)


def test_attention_sharpness() -> None:
    w = np.zeros((1, 1, 3, 2))
    w[0, 0, 0] = [1.0, 0.0]
    w[0, 0, 1] = [0.5, 0.5]  # row 2 is all zero: skipped
    s = L.attention_sharpness(w)
    assert s.mean_max_weight == pytest.approx(0.75)
    assert s.mean_entropy == pytest.approx(math.log(2) / 2)
    assert math.isnan(L.attention_sharpness(np.zeros((2, 2))).mean_max_weight)


def test_compare_scaling_sharpens_heads(make_gpt, make_seq2seq) -> None:
    tok = CharTokenizer("abcdefghijkl")  # 12 chars + 4 specials = 16 = the tiny models' vocab
    gpt = L.compare_scaling(make_gpt("rope"), tok, "abcabc")
    assert set(gpt.scaled) == {"self"} and gpt.scaled["self"].shape == (2, 2, 6, 6)
    assert gpt.output == {"scaled": "", "unscaled": ""}
    s, u = gpt.stats["scaled"]["self"], gpt.stats["unscaled"]["self"]
    assert u.mean_max_weight > s.mean_max_weight and u.mean_entropy < s.mean_entropy
    s2s = L.compare_scaling(make_seq2seq("sinusoidal"), tok, "abcz")
    assert set(s2s.scaled) == {"encoder_self", "decoder_self", "cross"}
    assert s2s.unknown == [(3, "z")]
    assert s2s.query_tokens["scaled"]["encoder_self"][-1] == "<eos>"
    with pytest.raises(InputError):
        L.compare_scaling(make_gpt(), tok, "")


def test_sinusoid_table_matches_core_and_shift_is_exact() -> None:
    core = sinusoidal_positional_encoding(40, 16).numpy()
    np.testing.assert_allclose(L.sinusoid_table(range(40), 16), core, atol=1e-5)
    np.testing.assert_allclose(L.sinusoidal_table(4, 8)[1, :2], [math.sin(1), math.cos(1)], atol=1e-6)
    for offset in (-7, 0, 1, 5, 25):
        check = L.shift_check(50, 64, offset)
        assert check.max_abs_error < 1e-6
        assert check.rotation.shape == (64, 64)
    with pytest.raises(ValueError):
        L.shift_check(10, 7, 1)


def test_cosine_similarity() -> None:
    table = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]])
    expected = [[1, 0, -1], [0, 1, 0], [-1, 0, 1]]
    np.testing.assert_allclose(L.cosine_similarity_matrix(table), expected, atol=1e-12)
    np.testing.assert_allclose(L.adjacent_similarity(table), [0.0, 0.0], atol=1e-12)
    pe = L.sinusoidal_table(50, 64)
    adj = L.adjacent_similarity(pe)
    assert adj.min() > 0.8 and np.ptp(adj) < 1e-4  # neighbours alike, the same at every p


def test_rope_equal_offsets_give_equal_scores() -> None:
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal(16), rng.standard_normal(16)
    same = L.rope_scores(q, k, [(3, 0), (8, 5), (53, 50), (103, 100)])
    assert np.ptp(same) < 1e-4
    other = L.rope_scores(q, k, [(3, 0), (4, 0)])
    assert abs(other[0] - other[1]) > 1e-3
    assert L.rope_scores(q, k, [(0, 0)])[0] == pytest.approx(float(q @ k), rel=1e-5)
    absolute = L.absolute_scores(q, k, [(3, 0), (8, 5), (53, 50)])
    assert np.ptp(absolute) > 0.1  # added codes do depend on the absolute positions


def test_rope_pair_path_rotates() -> None:
    path = L.rope_pair_path([1.0, 0.0], [0, 1, 2], d_head=16, pair=0)
    expected = [[1, 0], [math.cos(1), math.sin(1)], [math.cos(2), math.sin(2)]]
    np.testing.assert_allclose(path, expected, atol=1e-6)
    assert L.rope_frequency(16, 0) == pytest.approx(1.0, rel=1e-6)
    assert L.rope_frequency(16, 1) == pytest.approx(10000 ** (-2 / 16), rel=1e-5)
    norms = np.linalg.norm(L.rope_pair_path([0.3, -0.4], range(10), 16, 3), axis=1)
    np.testing.assert_allclose(norms, 0.5, atol=1e-6)
    with pytest.raises(ValueError):
        L.rope_pair_path([1.0, 0.0], [0], 16, 8)


def test_alibi_demo() -> None:
    demo = L.alibi_demo(8, 6, content=0.0)
    np.testing.assert_allclose(demo.slopes, [2.0 ** -(i + 1) for i in range(8)])
    assert demo.bias.shape == (8, 6, 6)
    assert demo.bias[0, 5, 2] == pytest.approx(-0.5 * 3)
    assert (demo.weights[:, 0, 1:] == 0).all()  # causal: the first query sees only itself
    np.testing.assert_allclose(demo.weights.sum(-1), 1.0, atol=1e-6)
    # equal content: weight falls with distance, faster for steeper heads
    assert demo.weights[0, 5, 5] > demo.weights[0, 5, 0]
    assert demo.weights[0, 5, 5] > demo.weights[7, 5, 5]
    assert len(L.alibi_demo(6, 4).slopes) == 6


def test_learned_table_and_positions_seen(make_gpt, make_seq2seq) -> None:
    gpt = make_gpt("learned")
    table = L.learned_position_table(gpt)
    assert table.shape == (16, 16)
    np.testing.assert_array_equal(table, gpt.positions.table.weight.detach().numpy())
    s2s = make_seq2seq("learned")
    encoder_table = s2s.src_positions.table.weight.detach().numpy()
    np.testing.assert_array_equal(L.learned_position_table(s2s), encoder_table)
    with pytest.raises(ValueError, match="learned"):
        L.learned_position_table(make_gpt("rope"))
    assert L.positions_seen_in_training({"task": "reverse", "train_args": {"max_len": 10}}) == 11
    assert L.positions_seen_in_training({"task": "lm", "train_args": {"block_size": 128}}) == 128
    assert L.positions_seen_in_training({"task": "lm"}) is None


def test_lr_schedules() -> None:
    s = L.lr_schedules(d_model=512, warmup=400, total=2000)
    assert s.steps[0] == 1 and len(s.steps) == 2000
    assert int(np.argmax(s.vaswani)) + 1 == 400
    assert s.vaswani.max() == pytest.approx(512**-0.5 * 400**-0.5)
    assert s.cosine.max() == pytest.approx(s.vaswani.max())
    assert s.cosine[-1] == pytest.approx(0.1 * s.vaswani.max(), rel=0.01)
    assert (np.diff(s.vaswani[:399]) > 0).all() and (np.diff(s.vaswani[400:]) < 0).all()


def test_smoothed_target() -> None:
    t = L.smoothed_target(10, 3, 0.1)
    assert t.target_mass == pytest.approx(0.91)
    assert t.distribution.sum() == pytest.approx(1.0)
    assert t.distribution[0] == pytest.approx(0.01)
    assert t.loss_floor == pytest.approx(float(L.entropy(t.distribution)))
    assert L.smoothed_target(5, 0, 0.0).loss_floor == 0.0
    with pytest.raises(ValueError):
        L.smoothed_target(5, 5, 0.1)
    with pytest.raises(ValueError):
        L.smoothed_target(5, 0, 1.5)
