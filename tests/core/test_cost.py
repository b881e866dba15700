"""transformer_core.cost: parameters counted from built models, FLOPs equal to PyTorch's own
FLOP counter, attention memory, and chapter 004's printed figures as oracles."""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from tests.support.models import random_block
from transformer_core import cost
from transformer_core.capture import AttentionCapture
from transformer_core.config import ModelConfig
from transformer_core.io import load_checkpoint
from transformer_core.models import build_model, count_parameters

#: chapter 004's reversal Transformer: d = 96, h = 4, d_ff = 192, N = 2, 29 symbols, Post-LN,
#: ReLU, no biases in its attention projections, a separate output projection
CHAPTER = ModelConfig(
    arch="seq2seq", vocab_size=29, d_model=96, n_heads=4, n_layers=2, d_ff=192, max_len=64,
    norm_position="post", activation="relu", tie_weights=False, attention_bias=False,
)  # fmt: skip


def random_config(rng: random.Random) -> ModelConfig:
    heads = rng.choice([1, 2, 4, 8])
    return ModelConfig(
        arch=rng.choice(["gpt", "seq2seq"]),
        vocab_size=rng.randint(5, 400),
        d_model=heads * 2 * rng.randint(1, 12),
        n_heads=heads,
        n_layers=rng.randint(1, 4),
        d_ff=rng.randint(1, 300),
        max_len=64,
        mlp=rng.random() < 0.8,
        **random_block(rng),
    )


def test_the_chapter_model_reproduces_its_printed_figures() -> None:
    assert sum(cost.parameter_counts(CHAPTER).values()) == 380_064
    assert count_parameters(build_model(CHAPTER)) == 380_064
    assert cost.chapter_estimates(96, 192, 29, 2).total == 526_368
    chapter = cost.chapter_block_flops(96, 192, 10)
    assert chapter.total == 1_125_120
    assert round(chapter.attention / chapter.ffn, 2) == 0.03
    assert cost.attention_memory(10, 4) == 1_600
    assert round(cost.attention_memory(2048, 4) / 1e6, 1) == 67.1


def test_parameter_counts_split_what_the_built_model_holds() -> None:
    counts = cost.parameter_counts(CHAPTER)
    assert counts["encoder: self-attention (W_Q, W_K, W_V, W_O)"] == 2 * 4 * 96 * 96
    assert counts["decoder: cross-attention (W_Q, W_K, W_V, W_O)"] == 2 * 4 * 96 * 96
    assert counts["encoder: feed-forward (W_1, W_2)"] == 2 * (96 * 192 + 192 + 192 * 96 + 96)
    assert counts["output projection (unembedding)"] == 29 * 96
    with_bias = cost.parameter_counts(ModelConfig(**{**CHAPTER.to_dict(), "attention_bias": True}))
    assert sum(with_bias.values()) - 380_064 == 6 * 4 * 96  # three attentions a layer, two layers


@pytest.mark.parametrize("seed", range(24))
def test_parameter_counts_equal_the_numel_of_the_built_model(seed: int) -> None:
    config = random_config(random.Random(seed))
    assert sum(cost.parameter_counts(config).values()) == sum(
        p.numel() for p in build_model(config).parameters()
    )


@pytest.mark.parametrize("seed", range(8))
def test_forward_flops_equal_pytorchs_flop_counter(seed: int) -> None:
    """The explicit attention path (a capture) runs Q K^T and weights V as matrix products the
    counter sees; the fused kernel's are not counted on CPU."""
    rng = random.Random(100 + seed)
    config = random_config(rng)
    T = rng.randint(1, 20)
    model = build_model(config).eval()
    ids = torch.randint(4, config.vocab_size, (1, T))
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        if config.arch == "gpt":
            model(ids, capture=AttentionCapture())
        else:
            model(ids, ids, capture=AttentionCapture())
    assert counter.get_total_flops() == cost.forward_flops(config, T)


def test_attention_overtakes_the_ffn_at_d_ff() -> None:
    assert cost.crossover_length(CHAPTER) == 192
    at = cost.block_flops(CHAPTER, 192)
    assert at.attention == at.ffn
    swiglu = ModelConfig(**{**CHAPTER.to_dict(), "activation": "swiglu"})
    assert cost.crossover_length(swiglu) == 288
    assert cost.crossover_length(ModelConfig(**{**CHAPTER.to_dict(), "mlp": False})) == float("inf")


def test_attention_memory_with_a_window_and_a_fused_kernel() -> None:
    assert cost.attention_memory(2048, 4, window=256) == 4 * 2048 * 256 * 4
    assert cost.attention_memory(100, 4, window=500) == cost.attention_memory(100, 4)  # W >= T: no saving
    assert cost.attention_memory(2048, 4, fused=True) == 4 * 2048 * 4
    assert cost.kv_cache_memory(CHAPTER, 10) == 2 * 2 * 10 * 96 * 4


def test_a_model_without_attention_biases_traces_and_matches_its_fused_path() -> None:
    model = build_model(CHAPTER).eval()
    src = torch.randint(4, 29, (2, 7))
    capture = AttentionCapture()
    with torch.no_grad():
        fused = model(src, src)
        explicit = model(src, src, capture=capture)
    assert model.encoder[0].self_attn.in_proj.bias is None
    assert torch.allclose(fused, explicit, atol=1e-5)
    assert capture.weights("cross").shape[-2:] == (7, 7)


def test_a_timed_forward_pass_and_the_matrix_rate_are_positive() -> None:
    small = ModelConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=16)
    assert cost.time_forward(small, 8, repeats=2) > 0
    assert cost.matmul_rate(n=64, repeats=2) > 1e6


SHIPPED_GPTS = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "checkpoints").glob("gpt-*"))


@pytest.mark.parametrize("name", SHIPPED_GPTS)
def test_kv_cache_logits_equal_recomputation_on_every_shipped_gpt(name: str) -> None:
    """In float64 the two ways agree to rounding (1e-9); in float32, as the app runs, within 1e-4
    of logits around 10."""
    ckpt = load_checkpoint(Path(__file__).resolve().parents[2] / "checkpoints" / name)
    prompt = ckpt.tokenizer.encode("def main():\n    x = 1")
    steps = cost.kv_cache_steps(ckpt.model, prompt, 24)
    assert len(steps) == 24 and max(s.max_logit_gap for s in steps) < 1e-4
    assert [(s.fed_cached, s.fed_full) for s in steps[:2]] == [
        (len(prompt), len(prompt)),
        (1, len(prompt) + 1),
    ]
    double = copy.deepcopy(ckpt.model).double()
    assert max(s.max_logit_gap for s in cost.kv_cache_steps(double, prompt, 24)) < 1e-9
