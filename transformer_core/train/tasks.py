"""Training tasks. A task makes batches, computes the loss, evaluates and snapshots a
model; the trainer only calls these four methods (the `Task` protocol) and knows nothing
else about it. Tasks are frozen: a changed setting is a new task (`dataclasses.replace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from transformer_core.interp.trace import trace_gpt, trace_seq2seq
from transformer_core.io.data import lm_batch, random_positions, random_strings, reversal_batch, split_ids
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.losses import mean_token_nll
from transformer_core.train.evaluation import evaluate_lm, evaluate_reversal
from transformer_core.vocab import PAD_ID

REVERSAL_PROBE = "attention"
LM_PROBE = "The return statement"


@dataclass(frozen=True)
class Batch:
    """One training batch of any task: `model(*inputs, **options)` gives logits (B, T, V)
    that are scored against `targets` (B, T); target positions equal to PAD_ID (reversal)
    are ignored. `tokens` counts the input tokens (for tokens/s)."""

    inputs: tuple[torch.Tensor, ...]
    targets: torch.Tensor
    options: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return int(sum(t.numel() for t in self.inputs))


class Task(Protocol):
    """What the trainer needs from a task (and what the /train page shows of one)."""

    name: str
    tokenizer: CharTokenizer
    probe: str

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device) -> Batch: ...

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
        """(scalar loss, number of input tokens)."""
        ...

    def evaluate(self, model: nn.Module) -> dict[str, Any]: ...

    def snapshot(self, model: nn.Module) -> dict[str, Any]:
        """Attention of the fixed probe: arrays (L, H, Tq, Tk) per kind plus token lists."""
        ...


def cross_entropy_loss(
    model: nn.Module, batch: Batch, label_smoothing: float = 0.0, ignore_index: int = -100
) -> tuple[torch.Tensor, int]:
    """Mean next-token cross-entropy of `model` on `batch` (float32 even under autocast)."""
    logits = model(*batch.inputs, **batch.options)  # (B, T, V)
    return mean_token_nll(logits, batch.targets, ignore_index, label_smoothing), batch.tokens


@dataclass(frozen=True)
class ReversalTask:
    """Reverse random strings of lengths min_len..max_len (source ends with EOS)."""

    tokenizer: CharTokenizer
    min_len: int = 3
    max_len: int = 10
    eval_lengths: tuple[int, ...] = (3, 5, 7, 10)
    eval_samples: int = 200
    probe: str = REVERSAL_PROBE
    name: str = "reverse"
    random_positions: int = 0  # > 0: train on random increasing positions from [0, this)

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device) -> Batch:
        strings = random_strings(batch_size, self.min_len, self.max_len, generator)
        rb = reversal_batch(self.tokenizer, strings, device)
        options = {}
        if self.random_positions:
            src_pos, tgt_pos = (
                random_positions(n, self.random_positions, generator).to(device)
                for n in (rb.src.size(1), rb.tgt_in.size(1))
            )
            options = {"src_positions": src_pos, "tgt_positions": tgt_pos}
        return Batch((rb.src, rb.tgt_in), rb.tgt_out, options)

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
        return cross_entropy_loss(model, batch, label_smoothing, ignore_index=PAD_ID)

    def evaluate(self, model: nn.Module) -> dict[str, Any]:
        return evaluate_reversal(model, self.tokenizer, list(self.eval_lengths), self.eval_samples)

    def snapshot(self, model: nn.Module) -> dict[str, Any]:
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


@dataclass(frozen=True)
class LanguageModelTask:
    """Predict the next character; train_ids / val_ids (N,) are the corpus split 90 / 10.
    Build it with `from_text`."""

    tokenizer: CharTokenizer
    train_ids: torch.Tensor
    val_ids: torch.Tensor
    block_size: int = 128
    eval_batches: int = 20
    probe: str = LM_PROBE
    name: str = "lm"

    @classmethod
    def from_text(cls, tokenizer: CharTokenizer, text: str, block_size: int = 128) -> LanguageModelTask:
        """Split the encoded text; block_size shrinks to fit a short validation part."""
        ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)
        train_ids, val_ids = split_ids(ids)
        return cls(tokenizer, train_ids, val_ids, min(block_size, len(val_ids) - 2))

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device) -> Batch:
        x, y = lm_batch(self.train_ids, self.block_size, batch_size, generator)
        return Batch((x.to(device),), y.to(device))

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
        return cross_entropy_loss(model, batch, label_smoothing)

    def evaluate(self, model: nn.Module) -> dict[str, Any]:
        return evaluate_lm(model, self.val_ids, self.block_size, self.eval_batches)

    def probe_text(self) -> str:
        """The probe with characters outside the vocabulary dropped (never empty)."""
        return "".join(c for c in self.probe if c in self.tokenizer.stoi) or "".join(self.tokenizer.chars[:8])

    def snapshot(self, model: nn.Module) -> dict[str, Any]:
        was_training = model.training
        model.eval()
        result = trace_gpt(model, self.tokenizer, self.probe_text())
        model.train(was_training)
        return {**result.attention, "source_tokens": result.tokens}


def attention_arrays(snapshot: dict[str, Any]) -> dict[str, np.ndarray]:
    """The (L, H, Tq, Tk) arrays of a snapshot, without its token lists."""
    return {k: v for k, v in snapshot.items() if isinstance(v, np.ndarray)}
