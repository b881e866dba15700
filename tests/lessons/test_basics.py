"""attention_lab.lessons.basics against the worked numbers of the teaching material."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attention_lab.lessons import basics as lesson


def test_qkv_toy_weights_and_context() -> None:
    r = lesson.retrieve(lesson.QKV_QUERY, lesson.QKV_KEYS, lesson.QKV_VALUES)
    np.testing.assert_allclose(r.scores, [0.0, 1.5, 3.0, 4.5])
    np.testing.assert_allclose(r.weights, [0.0087, 0.0388, 0.1738, 0.7788], atol=5e-5)
    np.testing.assert_allclose(r.context, [0.5718, 0.6019], atol=5e-5)
    assert r.weights.sum() == pytest.approx(1.0)


def test_retrieve_scale_and_shape_check() -> None:
    scaled = lesson.retrieve([1.0, 1.0], [[1.0, 0.0], [0.0, 2.0]], [[1.0], [2.0]], scale=0.5)
    np.testing.assert_allclose(scaled.scores, [0.5, 1.0])
    with pytest.raises(ValueError, match="features"):
        lesson.retrieve([1.0, 2.0], lesson.QKV_KEYS, lesson.QKV_VALUES)


def test_masked_rows_zero_padding_and_renormalise() -> None:
    plain, masked = lesson.masked_rows(lesson.PADDED_SCORES, lesson.PADDED_VALID_LENS)
    np.testing.assert_allclose(
        plain, [[0.6103, 0.2245, 0.0826, 0.0826], [0.1770, 0.5317, 0.1602, 0.1311]], atol=5e-5
    )
    np.testing.assert_allclose(masked, [[0.7311, 0.2689, 0.0, 0.0], [0.2037, 0.6120, 0.1843, 0.0]], atol=5e-5)
    assert masked[0, 2] == 0.0 and masked[0, 3] == 0.0 and masked[1, 3] == 0.0  # exactly zero
    np.testing.assert_allclose(masked.sum(-1), 1.0)
    np.testing.assert_array_equal(
        lesson.valid_length_mask([1, 4], 4), [[True, False, False, False], [True] * 4]
    )


def test_kernel_regression_house_prices() -> None:
    g = lesson.kernel_regression(
        lesson.HOUSE_QUERY, lesson.HOUSE_LOCATIONS, lesson.HOUSE_PRICES, "gaussian", 1.0
    )
    b = lesson.kernel_regression(
        lesson.HOUSE_QUERY, lesson.HOUSE_LOCATIONS, lesson.HOUSE_PRICES, "boxcar", 1.0
    )
    assert round(g.prediction, 3) == 103.753
    assert round(b.prediction, 3) == 120.0
    np.testing.assert_allclose(g.weights, g.similarity / g.similarity.sum())
    np.testing.assert_array_equal(b.similarity, [0, 1, 0, 0, 0, 0])


def test_kernel_regression_edges() -> None:
    far = lesson.kernel_regression(1000.0, lesson.HOUSE_LOCATIONS, lesson.HOUSE_PRICES, "gaussian", 0.1)
    assert far.prediction == pytest.approx(130.0)  # nearest house wins; no 0/0 underflow
    empty = lesson.kernel_regression(7.5, lesson.HOUSE_LOCATIONS, lesson.HOUSE_PRICES, "boxcar", 1.0)
    assert math.isnan(empty.prediction)
    wide = lesson.kernel_regression(2.0, lesson.HOUSE_LOCATIONS, lesson.HOUSE_PRICES, "gaussian", 1e4)
    assert wide.prediction == pytest.approx(np.mean(lesson.HOUSE_PRICES), rel=1e-6)
    curve = lesson.kernel_regression_curve(
        [2.0, 7.5], lesson.HOUSE_LOCATIONS, lesson.HOUSE_PRICES, "boxcar", 1.0
    )
    assert curve[0] == 120.0 and math.isnan(curve[1])
    with pytest.raises(ValueError):
        lesson.kernel_similarity(0.0, [1.0], "gaussian", 0.0)
    with pytest.raises(ValueError):
        lesson.kernel_similarity(0.0, [1.0], "triangle", 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("kernel", ["gaussian", "boxcar"])
@pytest.mark.parametrize("width", [0.05, 0.4, 1.0, 2.75, 5.0])
def test_the_curve_is_the_regression_at_each_query_number_for_number(kernel: str, width: float) -> None:
    """The curve computes every query at once; each point is kernel_regression's prediction at
    that query to the last bit (NaN where the boxcar sees no house), on the page's grid and on
    keys and queries of its own."""
    rng = np.random.default_rng(int(width * 100))
    cases = [
        (np.linspace(0.0, 11.0, 221), lesson.HOUSE_LOCATIONS, lesson.HOUSE_PRICES),
        (rng.normal(size=50) * 3, rng.normal(size=30), rng.normal(size=30)),
    ]
    for queries, keys, values in cases:
        curve = lesson.kernel_regression_curve(queries, keys, values, kernel, width)  # type: ignore[arg-type]
        one = [lesson.kernel_regression(float(q), keys, values, kernel, width).prediction for q in queries]  # type: ignore[arg-type]
        np.testing.assert_array_equal(curve, one)
    with pytest.raises(ValueError, match="width"):
        lesson.kernel_regression_curve([1.0], [1.0], [1.0], kernel, 0.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kernel"):
        lesson.kernel_regression_curve([1.0], [1.0], [1.0], "triangle", width)  # type: ignore[arg-type]


def test_matrix_attention_batched_example() -> None:
    m = lesson.matrix_attention(lesson.BATCH_Q, lesson.BATCH_K, lesson.BATCH_V)
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
    hs = lesson.split_heads(lesson.SPLIT_X, 2)
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
    one = lesson.split_heads(lesson.SPLIT_X, 1)
    whole = lesson.matrix_attention([lesson.SPLIT_X], [lesson.SPLIT_X], [lesson.SPLIT_X])
    np.testing.assert_allclose(one.weights[0], whole.weights[0])
    with pytest.raises(ValueError):
        lesson.split_heads(lesson.SPLIT_X, 3)


def test_permutation_equivariance_and_positions_break_it() -> None:
    x = np.random.default_rng(0).standard_normal((4, 4))
    plain = lesson.permutation_check(x, [2, 0, 1, 3])
    assert plain.max_abs_diff < 1e-12
    np.testing.assert_allclose(plain.shuffled_output, plain.output[[2, 0, 1, 3]], atol=1e-12)
    with_pos = lesson.permutation_check(x, [2, 0, 1, 3], add_positions=True)
    assert with_pos.max_abs_diff > 1e-3
    assert lesson.permutation_check(x, [0, 1, 2, 3], add_positions=True).max_abs_diff < 1e-12
    with pytest.raises(ValueError):
        lesson.permutation_check(x, [0, 0, 1, 2])


def test_the_block_trace_reproduces_chapter_004s_printed_numbers() -> None:
    """Chapter 004 traces one Post-LN encoder block (d = 4, h = 2, T = 3, seed 42): the library's
    EncoderBlock, drawn in the same order, gives the same numbers to the printed 3 decimals."""
    b = lesson.block_trace(42)
    assert np.allclose(b.x.round(3), [[0.337, 0.129, 0.234, 0.23], [-1.123, -0.186, 2.208, -0.638],
                                      [0.462, 0.267, 0.535, 0.809]])  # fmt: skip
    assert np.allclose(b.attention.round(3), [[-0.225, 0.157, -0.128, 0.006], [-0.4, 0.285, -0.121, -0.038],
                                              [-0.198, 0.137, -0.133, 0.015]])  # fmt: skip
    assert np.allclose(
        b.weights[1].round(3), [[0.349, 0.312, 0.34], [0.226, 0.499, 0.276], [0.369, 0.284, 0.346]]
    )
    assert np.allclose(b.normed_1.round(3), [[-0.939, 1.29, -1.008, 0.657], [-1.137, 0.076, 1.564, -0.503],
                                             [-0.996, -0.33, -0.342, 1.668]])  # fmt: skip
    assert np.allclose(b.normed_1.std(-1).round(4), [0.9992, 1.0, 0.9999])
    assert np.allclose(b.output.round(3), [[-0.661, 1.462, -1.144, 0.343], [-0.498, -0.308, 1.694, -0.888],
                                           [-0.802, -0.43, -0.482, 1.714]])  # fmt: skip
    assert np.allclose(b.heads @ b.w_o.T, b.attention, atol=1e-6)  # concat, then W_O
    assert b.hidden.shape == (3, 8) and (b.hidden >= 0).all()


def test_z_is_x_plus_sinusoidal_positions_as_chapter_000_prints() -> None:
    x = [[1.0, 0.5, 0.0, 0.2, 0.0, 0.0], [0.8, 0.1, 0.0, 0.3, 0.0, 0.0], [0.9, 0.2, 0.0, 0.4, 0.0, 0.0],
         [1.0, 0.5, 0.0, 0.2, 0.0, 0.0]]  # fmt: skip
    _, z = lesson.add_positions(x)
    assert np.allclose(z.round(4)[[1, 3]], [[1.6415, 0.6403, 0.0464, 1.2989, 0.0022, 1.0],
                                            [1.1411, -0.49, 0.1388, 1.1903, 0.0065, 1.0]])  # fmt: skip
    _, page = lesson.add_positions(lesson.PE_X)
    assert np.array_equal(lesson.PE_X[0], lesson.PE_X[3]) and not np.allclose(page[0], page[3])
