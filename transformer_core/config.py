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
from typing import TYPE_CHECKING, Any, Literal, get_args

import torch

from transformer_core.errors import ConfigError
from transformer_core.positional import POSITION_SCHEMES

Arch = Literal["gpt", "seq2seq", "bert"]
ModelKind = Literal["transformer", "gru", "bahdanau"]  # the command line's `train --arch`
if TYPE_CHECKING:  # a type checker cannot read a Literal built at runtime
    Positions = str
else:  # the choices are the registry's names: validate_fields reads them with get_args
    Positions = Literal[tuple(POSITION_SCHEMES)]
NormPosition = Literal["post", "pre"]
Norm = Literal["layernorm", "rmsnorm"]
Activation = Literal["relu", "gelu", "gelu_tanh", "swiglu"]  # gelu_tanh: GPT-2's "gelu_new"
AttentionKind = Literal["self", "encoder_self", "decoder_self", "cross"]

ATTENTION_KINDS: tuple[str, ...] = get_args(AttentionKind)
MODEL_KINDS: tuple[str, ...] = get_args(ModelKind)
RECURRENT_KINDS: tuple[str, ...] = ("gru", "bahdanau")
#: the task a model of each arch does, what its checkpoint reports: next character, reversal, masked character
ARCH_TASKS: dict[str, str] = {"gpt": "lm", "seq2seq": "reverse", "bert": "mlm"}


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a `GPT` (decoder-only), `BERT` (encoder-only, bidirectional) or
    `Seq2Seq` (encoder-decoder) model.

    `n_layers` is the depth of each stack (a seq2seq model has n_layers encoder blocks and
    n_layers decoder blocks). `max_len` bounds the positions a model accepts; only the
    `learned` scheme truly cannot go past it. `model` picks the network of a seq2seq model:
    the Transformer, or a GRU encoder-decoder without attention (`gru`) or with Bahdanau's
    additive attention (`bahdanau`); a recurrent one has d_model hidden units, one layer, one
    attention "head", no positional scheme (the recurrence orders the tokens) and no use for
    d_ff, norm or activation.
    """

    arch: Arch = "gpt"
    model: ModelKind = "transformer"
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
    mlp: bool = True  # False: attention-only blocks (no feed-forward), as in Olsson et al. 2022
    scale_embedding: bool = True  # token vectors times sqrt(d_model) (Vaswani); False: GPT-2, nanoGPT
    attention_bias: bool = True  # biases in W_Q, W_K, W_V, W_O (GPT-2); False: Vaswani's and LLaMA's

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.d_model % self.n_heads:
            raise ConfigError(f"d_model: {self.d_model} is not divisible by n_heads={self.n_heads}")
        POSITION_SCHEMES[self.positions].check(self)
        if self.model in RECURRENT_KINDS:
            check_recurrent(self)
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


def check_recurrent(config: ModelConfig) -> None:
    """ConfigError unless a recurrent model kind has the one shape it is built with."""
    wanted = {"arch": "seq2seq", "positions": "none", "n_layers": 1, "n_heads": 1}
    for name, value in wanted.items():
        if getattr(config, name) != value:
            raise ConfigError(
                f"{name}: a {config.model!r} model needs {name}={value!r}, got {getattr(config, name)!r} "
                "(one GRU layer, one additive attention, the recurrence gives the order)"
            )


def is_head_key(item: object) -> bool:
    """Whether item is a (kind, layer, head) triple: kind in ATTENTION_KINDS, ints >= 0."""
    return (
        isinstance(item, tuple)
        and len(item) == 3
        and item[0] in ATTENTION_KINDS
        and all(isinstance(i, int) and i >= 0 for i in item[1:])
    )


@dataclass(frozen=True, eq=False)
class HeadGates:
    """Per-call multipliers on every head's output, for gradients with respect to heads.

    gates maps a kind of ATTENTION_KINDS to a tensor (L, H) or (B, L, H) (one gate per batch
    row): head h of layer l multiplies its output by gates[kind][..., l, h] before the output
    projection. All ones leave the forward unchanged; d loss / d gate is the head importance
    of Michel et al. 2019. Compared and hashed by identity (it holds tensors).
    """

    gates: dict[str, torch.Tensor]

    def __post_init__(self) -> None:
        for kind, gate in self.gates.items():
            if kind not in ATTENTION_KINDS:
                raise ConfigError(f"head_gates: kind {kind!r} is not one of {ATTENTION_KINDS}")
            if not isinstance(gate, torch.Tensor) or gate.dim() not in (2, 3):
                raise ConfigError(f"head_gates: {kind} needs a (L, H) or (B, L, H) tensor")

    def for_layer(self, kind: str, layer: int) -> torch.Tensor | None:
        """(H,) or (B, H) gates of one layer, or None when this kind is not gated."""
        gate = self.gates.get(kind)
        return None if gate is None else gate[..., layer, :]


@dataclass(frozen=True, eq=False)
class HeadPatch:
    """Per-call replacement of single heads' outputs, for activation patching.

    values maps (kind, layer, head) to a (B, T, d_head) or (T, d_head) tensor: that head's
    output before the output projection (TransformerLens's hook_z, every position) is replaced
    by it. Patching a head with the value it would have computed changes nothing. Compared and
    hashed by identity (it holds tensors).
    """

    values: dict[tuple[str, int, int], torch.Tensor]

    def __post_init__(self) -> None:
        for key, value in self.values.items():
            if not is_head_key(key):
                raise ConfigError(f"head_patch: {key!r} is not a (kind, layer, head) triple")
            if not isinstance(value, torch.Tensor) or value.dim() not in (2, 3):
                raise ConfigError(f"head_patch: {key} needs a (B, T, d_head) or (T, d_head) tensor")

    def for_layer(self, kind: str, layer: int) -> tuple[tuple[int, torch.Tensor], ...]:
        """((head, value), ...) of one layer; () when none of its heads is patched."""
        return tuple((h, v) for (k, l, h), v in self.values.items() if (k, l) == (kind, layer))


@dataclass(frozen=True)
class InferenceOptions:
    """Switches for one forward call; none of them touches the weights.

    ablate holds (kind, layer, head) triples, kind one of ATTENTION_KINDS: that head's
    output is zeroed before the output projection. head_gates multiplies head outputs by
    per-call gates (see HeadGates), for the gradient importance of heads. head_patch
    replaces single heads' outputs by given values (see HeadPatch), for activation patching;
    a head both patched and ablated gives 0.
    """

    causal: bool = True
    padding_mask: bool = True
    positions: bool = True
    scale_scores: bool = True
    sliding_window: int | None = None
    ablate: frozenset[tuple[str, int, int]] = field(default_factory=frozenset)
    head_gates: HeadGates | None = None
    head_patch: HeadPatch | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ablate", frozenset(tuple(a) for a in self.ablate))
        validate_fields(self)
        if self.sliding_window is not None and self.sliding_window < 1:
            raise ConfigError(f"sliding_window: must be >= 1, got {self.sliding_window}")
        for item in self.ablate:
            if not is_head_key(item):
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
