"""Positional schemes: the maths as pure functions, one module class per scheme, one registry.

Absolute schemes (sinusoidal, learned) add a vector to each token embedding; relative
schemes act inside attention: RoPE rotates q and k, ALiBi adds a distance bias to scores,
T5 adds a learned bias per relative-position bucket.
`POSITION_SCHEMES` maps each config name to its class; the config's `Positions` choices,
the command line, scripts, tests and pages all read it, so a new scheme is one class here
plus one registry line.
"""

from __future__ import annotations

import math
from typing import ClassVar, Protocol

import torch
from torch import nn

from transformer_core.errors import ConfigError, InputError

Rope = tuple[torch.Tensor, torch.Tensor]


class ModelShape(Protocol):
    """What a scheme reads of a model's config (ModelConfig has it): schemes need no config
    import, so the config can read the registry for its choices."""

    @property
    def positions(self) -> str: ...
    @property
    def d_model(self) -> int: ...
    @property
    def n_heads(self) -> int: ...
    @property
    def d_head(self) -> int: ...
    @property
    def max_len(self) -> int: ...


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


def rope_angles(positions: torch.Tensor, d_head: int, base: float = 10000.0) -> Rope:
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


T5_NUM_BUCKETS, T5_MAX_DISTANCE = 32, 128  # Raffel et al. 2020's defaults


def t5_relative_position_bucket(
    relative_position: torch.Tensor,
    bidirectional: bool = True,
    num_buckets: int = T5_NUM_BUCKETS,
    max_distance: int = T5_MAX_DISTANCE,
) -> torch.Tensor:
    """Bucket (same shape, long) of each relative position j - i (key minus query), as in T5.

    Bidirectional: half the buckets for keys after the query, half for keys before it.
    Causal: keys after the query (masked anyway) share bucket 0 with distance 0. Within a
    direction, distances below half its buckets get one bucket each; larger ones share
    log-spaced buckets up to max_distance, and everything beyond shares the last bucket, so
    any distance has a bias (the scheme extrapolates).
    """
    if bidirectional:
        num_buckets //= 2
        offset = (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        offset = torch.zeros_like(relative_position)
        distance = (-relative_position).clamp(min=0)
    max_exact = num_buckets // 2
    if max_distance <= max_exact:
        raise ConfigError(f"t5: max_distance {max_distance} must exceed the {max_exact} exact buckets")
    log_ratio = torch.log(distance.clamp(min=1).float() / max_exact) / math.log(max_distance / max_exact)
    log_bucket = max_exact + (log_ratio * (num_buckets - max_exact)).long()
    log_bucket = log_bucket.clamp(max=num_buckets - 1)
    return offset + torch.where(distance < max_exact, distance, log_bucket)


def t5_max_distance(max_len: int, num_buckets: int = T5_NUM_BUCKETS) -> int:
    """T5's max_distance scaled to a model's context: its max_len, within [num_buckets, 128].

    Every bucket is then reachable inside the context the model trains on (T5's own 128 for a
    128-token GPT); the floor keeps the log-spaced range non-empty for tiny contexts."""
    return max(num_buckets, min(T5_MAX_DISTANCE, max_len))


# ------------------------------------------------------------------ one class per scheme


class PositionScheme(nn.Module):
    """How a model tells attention where each token is; the base class adds nothing.

    A scheme overrides the hooks it uses: `codes` (absolute: vectors added to the token
    embeddings), `rotation` (turns q and k, RoPE), `bias` (added to the scores, ALiBi, T5).
    `causal` says whether the stack it serves is causal (a decoder): a scheme that tells
    keys before the query from keys after it (T5) reads it. A model builds one scheme per
    stack and hands its output to every layer, so a learned bias is shared across layers.
    The class facts say the same thing without running a model, for labels and choices;
    a test checks that they agree with the hooks.
    """

    display_name: ClassVar[str]  # how pages name the scheme, e.g. "q (after RoPE)"
    absolute: ClassVar[bool] = False  # codes() adds a vector per position to the embeddings
    rotates: ClassVar[bool] = False  # rotation() turns q and k in self-attention
    biases: ClassVar[bool] = False  # bias() adds a per-head position bias to the scores
    extrapolates: ClassVar[bool] = True  # defined for positions >= config.max_len

    def __init__(self, config: ModelShape, causal: bool = False) -> None:
        super().__init__()
        self.causal = causal

    @classmethod
    def carries_position(cls) -> bool:
        """Whether attention gets any position signal: without one it treats its input as a set."""
        return cls.absolute or cls.rotates or cls.biases

    @classmethod
    def check(cls, config: ModelShape) -> None:
        """Raise ConfigError when `config` cannot use this scheme (ModelConfig calls it)."""

    def codes(self, positions: torch.Tensor) -> torch.Tensor | None:
        """(T, d_model) vectors added to the embeddings at integer positions (T,), or None."""
        return None

    def rotation(self, positions: torch.Tensor) -> Rope | None:
        """(cos, sin), each (T, d_head/2), turning q and the new k at positions (T,), or None.

        In self-attention the new tokens give both the queries and the new keys (cached
        keys were rotated when they were new), so one set of angles serves both.
        """
        return None

    def bias(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor | None:
        """(H, Tq, Tk) added to the self-attention scores, or None."""
        return None


class NoPositions(PositionScheme):
    """No position signal: attention sees a set, and the encoder is permutation-equivariant."""

    display_name = "no positions"


class SinusoidalPositions(PositionScheme):
    """Vaswani's fixed sin/cos table added to the embeddings; a formula, so any length works."""

    display_name = "Sinusoidal"
    absolute = True

    def __init__(self, config: ModelShape, causal: bool = False) -> None:
        super().__init__(config, causal)
        self.d_model = config.d_model
        table = sinusoidal_positional_encoding(config.max_len, config.d_model)
        self.register_buffer("table", table, persistent=False)

    def codes(self, positions: torch.Tensor) -> torch.Tensor:
        table: torch.Tensor = self.table
        last = int(positions.max()) + 1
        if last > table.size(0):  # past the precomputed rows: compute, never clip
            table = sinusoidal_positional_encoding(last, self.d_model, device=table.device)
        return table[positions]


class LearnedPositions(PositionScheme):
    """A trained (max_len, d_model) table added to the embeddings (BERT, GPT-2); it has no
    row for a position it never saw, so inputs past max_len are refused."""

    display_name = "Learned"
    absolute = True
    extrapolates = False

    def __init__(self, config: ModelShape, causal: bool = False) -> None:
        super().__init__(config, causal)
        self.table = nn.Embedding(config.max_len, config.d_model)
        nn.init.normal_(self.table.weight, std=0.1)

    def codes(self, positions: torch.Tensor) -> torch.Tensor:
        last, max_len = int(positions.max()) + 1, self.table.num_embeddings
        if last > max_len:
            raise InputError(
                f"input needs {last} positions but learned positions stop at "
                f"{max_len}: there is no embedding beyond the trained table"
            )
        return self.table(positions)


class RotaryPositions(PositionScheme):
    """RoPE (Su et al. 2021): rotate q and k so that q.k depends on the offset m - n only."""

    display_name = "RoPE"
    rotates = True

    def __init__(self, config: ModelShape, causal: bool = False) -> None:
        super().__init__(config, causal)
        self.d_head = config.d_head

    @classmethod
    def check(cls, config: ModelShape) -> None:
        if config.d_head % 2:
            raise ConfigError(
                f"positions: {config.positions!r} rotates pairs of dimensions, so d_model/n_heads "
                f"must be even (got d_head={config.d_head})"
            )

    def rotation(self, positions: torch.Tensor) -> Rope:
        return rope_angles(positions, self.d_head)


class AlibiPositions(PositionScheme):
    """ALiBi (Press et al. 2021): each head penalises scores linearly in the distance |i - j|."""

    display_name = "ALiBi"
    biases = True

    def __init__(self, config: ModelShape, causal: bool = False) -> None:
        super().__init__(config, causal)
        self.register_buffer("slopes", alibi_slopes(config.n_heads), persistent=False)

    def bias(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        return alibi_bias(self.slopes, q_positions, k_positions)


class T5Positions(PositionScheme):
    """T5 relative bias (Raffel et al. 2020): a learned scalar per head and bucket of j - i,
    added to the scores; bidirectional in an encoder, causal in a decoder."""

    display_name = "T5 bias"
    biases = True

    def __init__(self, config: ModelShape, causal: bool = False) -> None:
        super().__init__(config, causal)
        self.num_buckets = T5_NUM_BUCKETS
        self.max_distance = t5_max_distance(config.max_len, self.num_buckets)
        self.relative_attention_bias = nn.Embedding(self.num_buckets, config.n_heads)  # (buckets, H)
        nn.init.normal_(self.relative_attention_bias.weight, std=config.d_model**-0.5)

    def buckets(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        """(Tq, Tk) bucket of every (query, key) pair: what the bias map on /positions shows."""
        relative = k_positions[None, :] - q_positions[:, None]  # (Tq, Tk), j - i
        return t5_relative_position_bucket(relative, not self.causal, self.num_buckets, self.max_distance)

    def bias(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        buckets = self.buckets(q_positions, k_positions)
        return self.relative_attention_bias(buckets).permute(2, 0, 1)  # (Tq, Tk, H) -> (H, Tq, Tk)


# The one list of schemes: config name -> class. Adding a scheme = a class above + a line here.
POSITION_SCHEMES: dict[str, type[PositionScheme]] = {
    "sinusoidal": SinusoidalPositions,
    "learned": LearnedPositions,
    "rope": RotaryPositions,
    "alibi": AlibiPositions,
    "t5": T5Positions,
    "none": NoPositions,
}
