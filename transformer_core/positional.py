"""Positional schemes as pure functions.

Absolute schemes (sinusoidal, learned) add a vector to each token embedding; relative
schemes act inside attention: RoPE rotates q and k, ALiBi adds a distance bias to scores.
"""

from __future__ import annotations

import math

import torch


def sinusoidal_positional_encoding(
    num_positions: int,
    d_model: int,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The Vaswani table P of shape (num_positions, d_model).

    P[p, 2i] = sin(p / 10000^(2i/d_model)), P[p, 2i+1] = cos(p / 10000^(2i/d_model)):
    each pair of dimensions is a clock turning at its own speed, slow for high i.
    dtype=torch.float64 gives the exact table the lessons check identities against.
    """
    position = torch.arange(num_positions, dtype=dtype, device=device)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=dtype, device=device)
    angle = position / torch.pow(10000.0, two_i / d_model)  # (P, ceil(d/2))
    table = torch.zeros(num_positions, d_model, dtype=dtype, device=device)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


def shift_rotation(offset: int, d_model: int) -> torch.Tensor:
    """Block-diagonal matrix M with PE(p + offset) = M @ PE(p) for every p.

    Each (sin, cos) pair turns by the angle offset * w_i, independent of p: this is the
    linear-shift property that lets attention read relative offsets from absolute codes.
    It needs an even d_model: with an odd one the last sine has no cosine partner, and no
    matrix maps PE(p) to PE(p + offset).
    """
    if d_model % 2:
        raise ValueError(
            f"d_model: the shift rotation needs (sin, cos) pairs, so d_model must be even (got {d_model})"
        )
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    omega = 1.0 / torch.pow(10000.0, two_i / d_model)
    m = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i, w in enumerate(omega.tolist()):
        c, s = math.cos(offset * w), math.sin(offset * w)
        # [sin(a+b), cos(a+b)] = [[cos b, sin b], [-sin b, cos b]] @ [sin a, cos a]
        m[2 * i, 2 * i], m[2 * i, 2 * i + 1] = c, s
        m[2 * i + 1, 2 * i], m[2 * i + 1, 2 * i + 1] = -s, c
    return m


def rope_angles(
    positions: torch.Tensor, d_head: int, base: float = 10000.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the RoPE angles, each (T, d_head/2), for integer positions (T,).

    Pair i of dimensions (2i, 2i+1) turns by angle position * base^(-2i/d_head).
    """
    inv_freq = torch.pow(
        base, -torch.arange(0, d_head, 2, dtype=torch.float32, device=positions.device) / d_head
    )
    angle = positions.to(torch.float32)[:, None] * inv_freq[None, :]  # (T, d_head/2)
    return torch.cos(angle), torch.sin(angle)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each consecutive pair of the last dimension of x (..., T, d_head).

    Rotating q at position m and k at position n makes q.k depend on (m - n) only.
    """
    pairs = x.float().unflatten(-1, (-1, 2))  # (..., T, d_head/2, 2)
    x_even, x_odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack((x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1)
    return rotated.flatten(-2).type_as(x)  # (..., T, d_head)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """Per-head slopes of Press et al. (2021): a geometric sequence 2^(-8/n), 2^(-16/n), ...

    For head counts that are not powers of two, take the slopes of the closest smaller
    power of two, then every other slope of twice that count (the paper's recipe).
    """

    def power_of_two(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]

    closest = 2 ** math.floor(math.log2(n_heads))
    slopes = power_of_two(closest)
    if closest < n_heads:
        slopes += power_of_two(2 * closest)[0::2][: n_heads - closest]
    return torch.tensor(slopes, dtype=torch.float32)


def alibi_bias(slopes: torch.Tensor, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
    """Score bias (H, Tq, Tk) = -slope_h * |i - j|: farther keys are penalised linearly.

    Under a causal mask only j <= i survive, where this is the paper's -slope * (i - j).
    """
    distance = (q_positions[:, None] - k_positions[None, :]).abs().to(slopes.dtype)  # (Tq, Tk)
    return -slopes.to(distance.device)[:, None, None] * distance[None, :, :]
