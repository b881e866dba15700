"""Tiny models that build in milliseconds on a CPU, as pytest fixtures (core and lessons tests)."""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch

from transformer_core.config import ModelConfig
from transformer_core.models import GPT, Seq2Seq

VOCAB = 16


def _tiny_config(arch: str = "gpt", positions: str = "sinusoidal", **overrides) -> ModelConfig:
    fields = dict(
        arch=arch,
        vocab_size=VOCAB,
        d_model=16,
        n_heads=2,
        n_layers=2,
        d_ff=32,
        max_len=16,
        positions=positions,
    )
    fields.update(overrides)
    return ModelConfig(**fields)


@pytest.fixture
def tiny_config():
    """Factory: ModelConfig(arch, positions, **overrides) with d_model 16, 2 heads, 2 layers."""
    return _tiny_config


@pytest.fixture
def make_gpt():
    def build(positions: str = "sinusoidal", seed: int = 0, **overrides) -> GPT:
        torch.manual_seed(seed)
        return GPT(_tiny_config("gpt", positions, **overrides)).eval()

    return build


@pytest.fixture
def make_seq2seq():
    def build(positions: str = "sinusoidal", seed: int = 0, **overrides) -> Seq2Seq:
        torch.manual_seed(seed)
        return Seq2Seq(_tiny_config("seq2seq", positions, **overrides)).eval()

    return build


def random_block(rng: random.Random) -> dict[str, Any]:
    """A random draw of every choice inside a block that changes a model's parameters: the
    positional scheme, the norm and its place, the activation, tying and attention biases."""
    return dict(
        positions=rng.choice(["sinusoidal", "learned", "rope", "alibi", "t5", "none"]),
        norm_position=rng.choice(["pre", "post"]),
        norm=rng.choice(["layernorm", "rmsnorm"]),
        activation=rng.choice(["relu", "gelu", "swiglu"]),
        tie_weights=rng.random() < 0.5,
        attention_bias=rng.random() < 0.5,
    )


def random_config(arch: str, seed: int) -> ModelConfig:
    """A tiny model's config of `arch` with a random block (random_block, any activation incl.
    tanh GELU), attention-only one time in five, embeddings scaled or not; torch seeded alike."""
    rng = random.Random(seed)
    block = random_block(rng)
    block["activation"] = rng.choice(["relu", "gelu", "gelu_tanh", "swiglu"])
    torch.manual_seed(seed)
    return _tiny_config(arch, mlp=rng.random() < 0.8, scale_embedding=rng.random() < 0.5, **block)
