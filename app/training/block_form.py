"""/train's choices inside the Transformer's block (norm position, norm, activation) and its
learning-rate warm-up: the widgets, what a run's shape takes of them, and how a run's label
names a block that is not the preset's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import streamlit as st

#: how a run's label names a block that is not the preset's (pre-LN, LayerNorm, GELU)
BLOCK_TAGS = {("norm_position", "post"): "postln", ("norm", "rmsnorm"): "rmsnorm",
              ("activation", "relu"): "relu", ("activation", "swiglu"): "swiglu"}  # fmt: skip
NORM_HELP = (
    "Where each block's norm sits: pre, x + f(norm(x)) (GPT-2), or post, norm(x + f(x)) (Vaswani). "
    "Post-LN deep models need a learning-rate warm-up; Pre-LN ones train without it."
)
ACTIVATION_HELP = "The feed-forward network's non-linearity; SwiGLU gates one projection with another."
WARMUP_HELP = (
    "The learning rate rises over the first tenth of the steps (at most 200); off: it starts at its peak."
)


@dataclass(frozen=True)
class BlockChoice:
    """What the form says of the block (activation None: the model has no feed-forward network)."""

    norm_position: str
    norm: str
    activation: str | None
    warmup: bool

    def shape(self) -> dict[str, Any]:
        """The fields a run's shape overrides."""
        fields = {"norm_position": self.norm_position, "norm": self.norm, "activation": self.activation}
        return {k: v for k, v in fields.items() if v is not None}


def block_choices(recurrent: bool, no_ffn: bool) -> BlockChoice:
    """Four widgets in a row (train_norm_position, train_norm, train_activation, train_warmup),
    disabled where the model has no such part."""
    n1, n2, n3, n4 = st.columns(4)
    norm_position = n1.selectbox("Norm position", ["pre", "post"], key="train_norm_position",
                                 persist_state="session", disabled=recurrent, help=NORM_HELP)  # fmt: skip
    norm = n2.selectbox("Norm", ["layernorm", "rmsnorm"], key="train_norm", persist_state="session",
                        disabled=recurrent)  # fmt: skip
    activation = n3.selectbox(
        "Activation", ["gelu", "relu", "swiglu"], key="train_activation", persist_state="session",
        disabled=recurrent or no_ffn,
        help=ACTIVATION_HELP + (" This task's model has no feed-forward network." if no_ffn else ""),
    )  # fmt: skip
    warmup = n4.toggle("Warm-up", key="train_warmup", persist_state="session", help=WARMUP_HELP)
    return BlockChoice(norm_position, norm, None if no_ffn else activation, bool(warmup))


def run_tags(shape: dict[str, Any], warmup: bool) -> str:
    """'-postln-nowarmup' and the like: what a run's label adds for its block and warm-up."""
    tags = "".join(f"-{tag}" for (field, value), tag in BLOCK_TAGS.items() if shape.get(field) == value)
    return tags + ("" if warmup else "-nowarmup")
