"""Model configuration and per-call inference options.

`ModelConfig` describes the weights (it is saved with a checkpoint). `InferenceOptions`
describes one forward call (masks switched off, positions dropped, heads ablated): it
never changes the weights, so one model object can serve many users with different options.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from transformer_core.errors import ConfigError

Arch = Literal["gpt", "seq2seq"]
Positions = Literal["sinusoidal", "learned", "rope", "alibi", "none"]
NormPosition = Literal["post", "pre"]
Norm = Literal["layernorm", "rmsnorm"]
Activation = Literal["relu", "gelu", "swiglu"]
AttentionKind = Literal["self", "encoder_self", "decoder_self", "cross"]

POSITION_SCHEMES: tuple[str, ...] = get_args(Positions)
ATTENTION_KINDS: tuple[str, ...] = get_args(AttentionKind)


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a `GPT` (decoder-only) or `Seq2Seq` (encoder-decoder) model.

    `n_layers` is the depth of each stack (a seq2seq model has n_layers encoder blocks and
    n_layers decoder blocks). `max_len` bounds the positions a model accepts; only the
    `learned` scheme truly cannot go past it.
    """

    arch: Arch = "gpt"
    vocab_size: int = 64
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 512
    max_len: int = 256
    positions: Positions = "sinusoidal"
    norm_position: NormPosition = "pre"
    norm: Norm = "layernorm"
    activation: Activation = "gelu"
    dropout: float = 0.0
    tie_weights: bool = True

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model: {self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.positions == "rope" and self.d_head % 2:
            raise ConfigError(
                f"positions: 'rope' rotates pairs of dimensions, so d_model/n_heads "
                f"must be even (got d_head={self.d_head})"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"dropout: must be in [0, 1), got {self.dropout}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelConfig:
        """Build a config from JSON-like data, rejecting unknown fields by name."""
        if not isinstance(data, dict):
            raise ConfigError(f"config: expected an object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{unknown[0]}: unknown config field (known: {sorted(known)})")
        return cls(**data)


@dataclass(frozen=True)
class InferenceOptions:
    """Switches for one forward call; none of them touches the weights.

    ablate holds (kind, layer, head) triples, kind one of ATTENTION_KINDS: that head's
    output is zeroed before the output projection.
    """

    causal: bool = True
    padding_mask: bool = True
    positions: bool = True
    scale_scores: bool = True
    sliding_window: int | None = None
    ablate: frozenset[tuple[str, int, int]] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ablate", frozenset(tuple(a) for a in self.ablate))
        validate_fields(self)
        if self.sliding_window is not None and self.sliding_window < 1:
            raise ConfigError(f"sliding_window: must be >= 1, got {self.sliding_window}")
        for item in self.ablate:
            if (
                not isinstance(item, tuple)
                or len(item) != 3
                or item[0] not in ATTENTION_KINDS
                or not all(isinstance(i, int) and i >= 0 for i in item[1:])
            ):
                raise ConfigError(
                    f"ablate: {item!r} is not a (kind, layer, head) triple with kind in {ATTENTION_KINDS}"
                )

    def ablated_heads(self, kind: str, layer: int) -> list[int]:
        return sorted(h for k, l, h in self.ablate if k == kind and l == layer)


def validate_fields(obj: Any, min_int: int = 1) -> None:
    """Check every field against its annotation (Literal choices, int >= min_int, float, bool)."""
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        hint = hints[f.name]
        if typing.get_origin(hint) is Literal:
            if value not in get_args(hint):
                raise ConfigError(f"{f.name}: {value!r} is not one of {get_args(hint)}")
        elif hint is bool:
            if not isinstance(value, bool):
                raise ConfigError(f"{f.name}: expected true/false, got {value!r}")
        elif hint is int:
            if isinstance(value, bool) or not isinstance(value, int) or value < min_int:
                raise ConfigError(f"{f.name}: expected an integer >= {min_int}, got {value!r}")
        elif hint is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"{f.name}: expected a number, got {value!r}")
        elif typing.get_origin(hint) in (typing.Union, types.UnionType):
            allowed = tuple(a for a in get_args(hint) if a is not type(None))
            if value is not None and (isinstance(value, bool) or not isinstance(value, allowed)):
                raise ConfigError(f"{f.name}: expected {allowed[0].__name__} or null, got {value!r}")


DEFAULT_OPTIONS = InferenceOptions()
