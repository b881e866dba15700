"""Training tasks. A task makes batches, computes the loss, evaluates and snapshots a
model; the trainer only calls these four methods and knows nothing else about it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from transformer_core.interp.trace import trace_gpt, trace_seq2seq
from transformer_core.io.data import lm_batch, random_positions, random_strings, reversal_batch, split_ids
from transformer_core.io.tokenizer import PAD_ID, CharTokenizer
from transformer_core.train.evaluation import evaluate_lm, evaluate_reversal

REVERSAL_PROBE = "attention"
LM_PROBE = "The return statement"


@dataclass
class ReversalTask:
    """Reverse random strings of lengths min_len..max_len (source ends with EOS)."""

    tokenizer: CharTokenizer
    min_len: int = 3
    max_len: int = 10
    eval_lengths: list[int] = field(default_factory=lambda: [3, 5, 7, 10])
    eval_samples: int = 200
    probe: str = REVERSAL_PROBE
    name: str = "reverse"
    random_positions: int = 0  # > 0: train on random increasing positions from [0, this)

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device):
        strings = random_strings(batch_size, self.min_len, self.max_len, generator)
        batch = reversal_batch(self.tokenizer, strings, device)
        if not self.random_positions:
            return batch
        src_pos, tgt_pos = (
            random_positions(n, self.random_positions, generator).to(device)
            for n in (batch.src.size(1), batch.tgt_in.size(1))
        )
        return batch, src_pos, tgt_pos

    def loss(self, model: nn.Module, batch, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
        positions = {}
        if isinstance(batch, tuple):
            batch, src_pos, tgt_pos = batch
            positions = {"src_positions": src_pos, "tgt_positions": tgt_pos}
        logits = model(batch.src, batch.tgt_in, **positions)  # (B, Tt, V)
        loss = F.cross_entropy(
            logits.flatten(0, 1).float(),
            batch.tgt_out.flatten(),
            ignore_index=PAD_ID,
            label_smoothing=label_smoothing,
        )
        return loss, int(batch.src.numel() + batch.tgt_in.numel())

    def evaluate(self, model: nn.Module) -> dict:
        return evaluate_reversal(model, self.tokenizer, self.eval_lengths, self.eval_samples)

    def snapshot(self, model: nn.Module) -> dict[str, np.ndarray]:
        was_training = model.training
        model.eval()
        result = trace_seq2seq(model, self.tokenizer, self.probe, max_new_tokens=len(self.probe) + 1)
        model.train(was_training)
        return {
            **result.attention,
            "source_tokens": result.source_tokens,
            "target_tokens": result.target_tokens,
            "output": result.output,
        }


@dataclass
class LanguageModelTask:
    """Predict the next character of a corpus; the last 10% is held out for validation."""

    tokenizer: CharTokenizer
    text: str
    block_size: int = 128
    eval_batches: int = 20
    probe: str = LM_PROBE
    name: str = "lm"

    def __post_init__(self) -> None:
        ids = torch.tensor(self.tokenizer.encode(self.text), dtype=torch.long)
        self.train_ids, self.val_ids = split_ids(ids)
        self.block_size = min(self.block_size, len(self.val_ids) - 2)

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device):
        x, y = lm_batch(self.train_ids, self.block_size, batch_size, generator)
        return x.to(device), y.to(device)

    def loss(self, model: nn.Module, batch, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
        x, y = batch
        logits = model(x)  # (B, T, V)
        loss = F.cross_entropy(logits.flatten(0, 1).float(), y.flatten(), label_smoothing=label_smoothing)
        return loss, int(x.numel())

    def evaluate(self, model: nn.Module) -> dict:
        return evaluate_lm(model, self.val_ids, self.block_size, self.eval_batches)

    def snapshot(self, model: nn.Module) -> dict[str, np.ndarray]:
        was_training = model.training
        model.eval()
        probe = "".join(c for c in self.probe if c in self.tokenizer.stoi) or self.tokenizer.chars[:8]
        result = trace_gpt(model, self.tokenizer, probe)
        model.train(was_training)
        return {**result.attention, "source_tokens": result.tokens}
