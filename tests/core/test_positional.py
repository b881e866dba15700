"""Positional schemes: the pure functions (sinusoidal table, shift rotation, RoPE, ALiBi),
then the scheme classes and their registry."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_core.config import ModelConfig
from transformer_core.errors import ConfigError, InputError
from transformer_core.positional import (
    POSITION_SCHEMES,
    AlibiPositions,
    LearnedPositions,
    PositionScheme,
    RotaryPositions,
    SinusoidalPositions,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_angles,
    shift_rotation,
    sinusoidal_positional_encoding,
)

# ------------------------------------------------------------------ sinusoidal


def test_sinusoidal_table_worked_rows_d16():
    table = sinusoidal_positional_encoding(20, 16)
    assert table.shape == (20, 16)
    assert table.dtype == torch.float32
    torch.testing.assert_close(table[0, :8], torch.tensor([0.0, 1.0] * 4))
    torch.testing.assert_close(
        table[1, :8],
        torch.tensor([0.8415, 0.5403, 0.3110, 0.9504, 0.0998, 0.9950, 0.0316, 0.9995]),
        atol=5e-5,
        rtol=0,
    )
    torch.testing.assert_close(
        table[3, :8],
        torch.tensor([0.1411, -0.9900, 0.8126, 0.5828, 0.2955, 0.9553, 0.0947, 0.9955]),
        atol=5e-5,
        rtol=0,
    )


def test_sinusoidal_table_worked_row_d64():
    table = sinusoidal_positional_encoding(50, 64)
    assert table.shape == (50, 64)
    torch.testing.assert_close(table[10, :4], torch.tensor([-0.544, -0.839, 0.938, 0.348]), atol=5e-4, rtol=0)


@pytest.mark.parametrize("d_model", [6, 7, 32])
def test_sinusoidal_even_sin_odd_cos_base_10000(d_model):
    table = sinusoidal_positional_encoding(30, d_model).double()
    for p in (0, 1, 9, 29):
        for dim in range(d_model):
            i = dim // 2
            angle = p / 10000.0 ** (2 * i / d_model)
            expected = math.sin(angle) if dim % 2 == 0 else math.cos(angle)
            assert table[p, dim].item() == pytest.approx(expected, abs=2e-6), (p, dim)


def test_sinusoidal_rows_are_distinct_and_bounded():
    table = sinusoidal_positional_encoding(64, 32)
    assert table.abs().max() <= 1.0
    distances = torch.cdist(table, table)
    off_diagonal = distances[~torch.eye(64, dtype=torch.bool)]
    assert off_diagonal.min() > 0.1


# ------------------------------------------------------------------ shift rotation


def _reference_pe(p: int, d_model: int) -> torch.Tensor:
    """Independent float64 sinusoidal row (no library code)."""
    row = torch.zeros(d_model, dtype=torch.float64)
    for i in range(0, d_model, 2):
        angle = p / 10000.0 ** (i / d_model)
        row[i] = math.sin(angle)
        if i + 1 < d_model:
            row[i + 1] = math.cos(angle)
    return row


@pytest.mark.parametrize("offset", [1, 3, 10, -4])
def test_shift_rotation_moves_encodings_by_offset(offset):
    d_model = 16
    m = shift_rotation(offset, d_model)
    assert m.shape == (d_model, d_model)
    for p in (4, 7, 20, 55):
        torch.testing.assert_close(
            m @ _reference_pe(p, d_model), _reference_pe(p + offset, d_model), atol=1e-9, rtol=0
        )
    # the same matrix works on the library's table, whatever p is
    table = sinusoidal_positional_encoding(80, d_model).double()
    for p in (4, 11, 30):
        torch.testing.assert_close(m @ table[p], table[p + offset], atol=1e-5, rtol=0)
    # a rotation: orthogonal
    torch.testing.assert_close(m @ m.T, torch.eye(d_model, dtype=torch.float64), atol=1e-12, rtol=0)


def test_shift_rotation_depends_on_offset():
    assert not torch.allclose(shift_rotation(2, 8), shift_rotation(3, 8))
    torch.testing.assert_close(shift_rotation(0, 8), torch.eye(8, dtype=torch.float64))


def test_shift_rotation_refuses_odd_width():
    # with an odd width the last sine has no cosine partner: no matrix can shift it
    with pytest.raises(ValueError, match="d_model"):
        shift_rotation(3, 5)


# ------------------------------------------------------------------ RoPE


def _rotate_at(x: torch.Tensor, position: int) -> torch.Tensor:
    cos, sin = rope_angles(torch.tensor([position]), x.numel())
    return apply_rope(x[None, :], cos, sin)[0]


def test_rope_angles_shape_and_frequencies():
    cos, sin = rope_angles(torch.arange(5), 8)
    assert cos.shape == sin.shape == (5, 4)
    angles = torch.atan2(sin, cos)
    expected = torch.tensor([[p * 10000.0 ** (-2 * i / 8) for i in range(4)] for p in range(5)])
    torch.testing.assert_close(angles, torch.atan2(torch.sin(expected), torch.cos(expected)))


def test_rope_rotates_each_consecutive_pair():
    d = 8
    x = torch.zeros(d)
    x[0] = 1.0  # pair 0 turns by angle m, pair 1 by m / 10
    x[3] = 1.0
    m = 3
    rotated = _rotate_at(x, m)
    w1 = 10000.0 ** (-2 / d)
    expected = torch.tensor(
        [math.cos(m), math.sin(m), -math.sin(m * w1), math.cos(m * w1), 0.0, 0.0, 0.0, 0.0]
    )
    torch.testing.assert_close(rotated, expected, atol=1e-6, rtol=0)
    # position 0 is the identity, and rotations keep the norm
    torch.testing.assert_close(_rotate_at(x, 0), x)
    y = torch.randn(d)
    assert _rotate_at(y, 17).norm().item() == pytest.approx(y.norm().item(), rel=1e-5)


def test_rope_dot_product_depends_only_on_relative_offset():
    torch.manual_seed(0)
    d = 16
    q, k = torch.randn(d), torch.randn(d)

    def score(m: int, n: int) -> float:
        return float(_rotate_at(q, m) @ _rotate_at(k, n))

    for offset in (0, 1, 2, 5):
        pairs = [(offset, 0), (offset + 3, 3), (offset + 10, 10), (offset + 41, 41)]
        values = [score(m, n) for m, n in pairs]
        for v in values[1:]:
            assert v == pytest.approx(values[0], abs=1e-4), (offset, values)
    # different offsets give different scores
    by_offset = [score(offset + 4, 4) for offset in (0, 1, 2, 5, -3)]
    for i in range(len(by_offset)):
        for j in range(i + 1, len(by_offset)):
            assert abs(by_offset[i] - by_offset[j]) > 1e-3
    # and the unrotated score is not offset-invariant in general, so this is RoPE's doing
    assert score(0, 0) == pytest.approx(float(q @ k), abs=1e-5)


def test_apply_rope_on_batched_heads_matches_per_vector_rotation():
    torch.manual_seed(1)
    x = torch.randn(2, 3, 5, 8)  # (B, H, T, d_head)
    cos, sin = rope_angles(torch.arange(5), 8)
    rotated = apply_rope(x, cos, sin)
    assert rotated.shape == x.shape
    for t in range(5):
        torch.testing.assert_close(rotated[1, 2, t], _rotate_at(x[1, 2, t], t))


# ------------------------------------------------------------------ ALiBi


def _press_slopes(n: int) -> list[float]:
    """The recipe of Press et al., written out independently.

    For a power of two n the slopes are 2^(-8k/n), k = 1..n. Otherwise take the slopes of the
    largest power of two below n, then fill up with the odd-indexed slopes of twice that count.
    """

    def geometric(count: int) -> list[float]:
        return [2.0 ** (-8.0 * k / count) for k in range(1, count + 1)]

    if n & (n - 1) == 0:
        return geometric(n)
    base = 1 << (n.bit_length() - 1)
    extra = [s for idx, s in enumerate(geometric(2 * base)) if idx % 2 == 0]
    return geometric(base) + extra[: n - base]


def test_alibi_slopes_powers_of_two():
    torch.testing.assert_close(alibi_slopes(8), torch.tensor([2.0**-k for k in range(1, 9)]))
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8]))
    torch.testing.assert_close(alibi_slopes(1), torch.tensor([2.0**-8]))


def test_alibi_slopes_six_heads():
    expected = torch.tensor([2.0**-2, 2.0**-4, 2.0**-6, 2.0**-8, 2.0**-1, 2.0**-3])
    torch.testing.assert_close(alibi_slopes(6), expected)


@pytest.mark.parametrize("n_heads", list(range(1, 17)) + [24])
def test_alibi_slopes_follow_press_recipe(n_heads):
    slopes = alibi_slopes(n_heads)
    assert slopes.shape == (n_heads,)
    torch.testing.assert_close(slopes, torch.tensor(_press_slopes(n_heads)))
    assert len(set(slopes.tolist())) == n_heads  # every head its own slope


def test_alibi_bias_is_linear_distance_penalty():
    slopes = torch.tensor([0.5, 0.25])
    bias = alibi_bias(slopes, torch.arange(4), torch.arange(4))
    assert bias.shape == (2, 4, 4)
    distance = (torch.arange(4)[:, None] - torch.arange(4)[None, :]).abs().float()
    torch.testing.assert_close(bias[0], -0.5 * distance)
    torch.testing.assert_close(bias[1], -0.25 * distance)
    # queries after a cache: positions 3, 4 against keys 0..4
    late = alibi_bias(slopes, torch.tensor([3, 4]), torch.arange(5))
    torch.testing.assert_close(late[0, 1], torch.tensor([-2.0, -1.5, -1.0, -0.5, 0.0]))


# ------------------------------------------------------------------ scheme classes, registry

CONFIG = ModelConfig(d_model=16, n_heads=2, max_len=8)


@pytest.mark.parametrize("name", list(POSITION_SCHEMES))
def test_scheme_facts_agree_with_what_the_scheme_does(name):
    # pages and scripts read the class facts without a model; they must say what the hooks do
    cls = POSITION_SCHEMES[name]
    assert issubclass(cls, PositionScheme)
    scheme = cls(ModelConfig(d_model=16, n_heads=2, max_len=8, positions=name))
    pos = torch.arange(5)
    codes, rotation, bias = scheme.codes(pos), scheme.rotation(pos), scheme.bias(pos[3:], pos)
    assert (codes is not None) is cls.absolute
    assert (rotation is not None) is cls.rotates
    assert (bias is not None) is cls.biases
    assert cls.carries_position() is (cls.absolute or cls.rotates or cls.biases)
    if codes is not None:
        assert codes.shape == (5, 16) and codes.abs().max() > 0.0
        assert not torch.allclose(codes[1], codes[2])  # a different code per position
    if rotation is not None:
        cos, sin = rotation
        assert cos.shape == sin.shape == (5, 4)  # (T, d_head/2)
        torch.testing.assert_close(cos**2 + sin**2, torch.ones(5, 4))
    if bias is not None:
        assert bias.shape == (2, 2, 5)  # (H, Tq, Tk)
    far = torch.arange(12)  # past max_len 8
    if cls.extrapolates:
        assert (scheme.codes(far) is None) is not cls.absolute
    else:
        with pytest.raises(InputError):
            scheme.codes(far)


def test_scheme_display_names_are_distinct_labels():
    names = [cls.display_name for cls in POSITION_SCHEMES.values()]
    assert all(isinstance(n, str) and n.strip() for n in names)
    assert len(set(names)) == len(names)
    assert POSITION_SCHEMES["rope"].display_name == "RoPE"
    assert POSITION_SCHEMES["alibi"].display_name == "ALiBi"


def test_sinusoidal_scheme_is_the_contract_table_at_any_length():
    scheme = SinusoidalPositions(CONFIG)
    torch.testing.assert_close(scheme.codes(torch.arange(8)), sinusoidal_positional_encoding(8, 16))
    # past the precomputed max_len rows the formula continues, and gaps pick their rows
    far = torch.tensor([0, 3, 9, 20])
    torch.testing.assert_close(scheme.codes(far), sinusoidal_positional_encoding(21, 16)[far])
    assert scheme.state_dict() == {}  # a formula, not a weight


def test_learned_scheme_is_a_trained_table_that_stops_at_max_len():
    scheme = LearnedPositions(CONFIG)
    assert list(scheme.state_dict()) == ["table.weight"]
    assert scheme.table.weight.shape == (8, 16)
    picked = torch.tensor([1, 4, 7])  # randomized positions: any increasing subset
    torch.testing.assert_close(scheme.codes(picked), scheme.table.weight[picked])
    with pytest.raises(InputError, match="learned positions stop at 8"):
        scheme.codes(torch.arange(9))


def test_rotary_scheme_turns_by_rope_angles_and_needs_even_heads():
    scheme = RotaryPositions(CONFIG)
    pos = torch.tensor([2, 5, 6])
    for got, want in zip(scheme.rotation(pos), rope_angles(pos, 8), strict=True):
        torch.testing.assert_close(got, want)
    with pytest.raises(ConfigError, match="^positions.*d_head=3"):
        ModelConfig(d_model=12, n_heads=4, positions="rope")
    ModelConfig(d_model=12, n_heads=4, positions="alibi")  # only rotation needs pairs


def test_alibi_scheme_biases_with_press_slopes():
    scheme = AlibiPositions(ModelConfig(d_model=24, n_heads=6))
    q, k = torch.tensor([3, 4]), torch.arange(5)
    torch.testing.assert_close(scheme.bias(q, k), alibi_bias(alibi_slopes(6), q, k))
    assert scheme.state_dict() == {}  # slopes are fixed, not weights
