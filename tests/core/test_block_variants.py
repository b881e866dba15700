"""Block variants: Post-LN and Pre-LN blocks against their formulas (RMSNorm and SwiGLU: see
test_models), `train --norm-position/--norm/--activation` recorded in the checkpoint that then
loads and traces, per-block gradient norms in the trainer's step events, and reverse-postln."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_core.attention import AttentionSite
from transformer_core.config import ModelConfig
from transformer_core.interp.trace import trace_seq2seq
from transformer_core.io import load_checkpoint
from transformer_core.layers import EncoderBlock, RMSNorm
from transformer_core.train import StepEvent, Trainer, prepare_run, train_config
from transformer_core.train.trainer import block_parameters

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "transformer_core", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)  # fmt: skip


def config(**fields: object) -> ModelConfig:
    return ModelConfig(**{"vocab_size": 20, "d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 24, **fields})


@pytest.mark.parametrize("position", ["post", "pre"])
def test_post_ln_and_pre_ln_blocks_equal_their_formulas(position: str) -> None:
    x = torch.randn(2, 5, 16)
    block = EncoderBlock(config(norm_position=position)).eval()
    site = AttentionSite("encoder_self", 0)
    attention, ffn = block.self_attn, block.ffn
    assert ffn is not None and block.norm_ffn is not None
    if position == "post":  # Vaswani: x = norm(x + f(x))
        h = block.norm_self(x + attention(x, site))
        expected = block.norm_ffn(h + ffn(h))
    else:  # GPT-2: x = x + f(norm(x))
        h = x + attention(block.norm_self(x), site)
        expected = h + ffn(block.norm_ffn(h))
    assert torch.allclose(block(x, site), expected, atol=1e-6)


def test_train_records_the_block_and_the_checkpoint_loads_and_traces(tmp_path: Path) -> None:
    out = tmp_path / "variant"
    flags = "--steps 5 --d-model 16 --n-layers 1 --n-heads 2 --device cpu --quiet"
    block = "--norm-position post --norm rmsnorm --activation swiglu"
    result = cli("train", "--task", "reverse", *flags.split(), *block.split(), "--out", str(out))
    assert result.returncode == 0, result.stderr
    meta = json.loads((out / "checkpoint.json").read_text())
    assert (meta["config"]["norm_position"], meta["config"]["norm"], meta["config"]["activation"]) == (
        "post",
        "rmsnorm",
        "swiglu",
    )
    assert "--norm-position post --norm rmsnorm --activation swiglu" in meta["command"]
    ckpt = load_checkpoint(out)
    assert isinstance(ckpt.model.encoder[0].norm_self, RMSNorm) and ckpt.model.encoder[0].ffn.w3 is not None
    trace = trace_seq2seq(ckpt.model, ckpt.tokenizer, "abc")
    assert trace.attention["cross"].shape[:2] == (1, 2)


def test_a_recurrent_model_refuses_block_flags(tmp_path: Path) -> None:
    result = cli("train", "--task", "reverse", "--arch", "gru", "--norm-position", "post", "--steps", "2",
                 "--device", "cpu", "--quiet", "--out", str(tmp_path / "x"))  # fmt: skip
    assert result.returncode != 0
    assert "--norm-position: a 'gru' model has no Transformer block to change" in result.stderr


def test_step_events_carry_every_blocks_gradient_norm() -> None:
    train = train_config("reverse", steps=3, batch_size=8, device="cpu", eval_every=0)
    model, task = prepare_run(train, "sinusoidal", d_model=16, n_layers=2, n_heads=2)
    assert set(block_parameters(model)) == {"encoder.0", "encoder.1", "decoder.0", "decoder.1"}
    steps = [e for e in Trainer(model, task, train).run() if isinstance(e, StepEvent)]
    assert len(steps) == 3
    for event in steps:
        assert set(event.grad_norms) == {"encoder.0", "encoder.1", "decoder.0", "decoder.1"}
        assert all(v > 0 for v in event.grad_norms.values())


def test_the_shipped_postln_model_reverses_and_has_post_ln_blocks() -> None:
    ckpt = load_checkpoint("reverse-postln")
    assert ckpt.config.norm_position == "post"
    assert isinstance(ckpt.model.encoder_norm, torch.nn.Identity)  # no final norm after Post-LN blocks
    assert trace_seq2seq(ckpt.model, ckpt.tokenizer, "attention").output == "noitnetta"
