"""The induction task: predict the next character of a random segment repeated twice.

Why: the smallest setting where induction heads form (Olsson et al. 2022). The first copy of
a random segment is unpredictable (loss about log 26 nats); the second copy is predictable
only in context, by finding the earlier occurrence of the current character and copying
the one after it: a previous-token head in layer 0 and an induction head in layer 1.

Each row is a segment of random length repeated until the row is full, so the distance
between the copies varies from row to row and no fixed positional offset solves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from transformer_core.interp.heads import default_probe_set, detect_heads
from transformer_core.interp.trace import trace_gpt
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.losses import token_nll
from transformer_core.train.tasks import Batch, cross_entropy_loss

INDUCTION_PROBE = "qwhzkfjtmbrxqwhzkfjtmbrx"  # a random segment of 12 letters, twice


def induction_rows(
    batch_size: int, seq_len: int, min_segment: int, max_segment: int, vocab: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (B, seq_len + 1) over ids 0..vocab-1 (the caller shifts them) and where the
    second copy starts per row (B,) = the segment's length. Row: a random segment S of random
    length in [min_segment, max_segment], repeated until the row is full (S S S ...)."""
    total = seq_len + 1
    rows = torch.empty(batch_size, total, dtype=torch.long)
    lengths = torch.randint(min_segment, max_segment + 1, (batch_size,), generator=generator)
    for b in range(batch_size):
        n = int(lengths[b])
        segment = torch.randint(0, vocab, (n,), generator=generator)
        rows[b] = segment.repeat(total // n + 1)[:total]
    return rows, lengths


@dataclass(frozen=True)
class InductionTask:
    """Next-character prediction on rows of seq_len tokens: a random segment repeated."""

    tokenizer: CharTokenizer
    seq_len: int = 64
    min_segment: int = 6
    max_segment: int = 20
    eval_batches: int = 4
    probe: str = INDUCTION_PROBE
    name: str = "induction"

    def _rows(self, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        chars = len(self.tokenizer.chars)
        rows, starts = induction_rows(
            batch_size, self.seq_len, self.min_segment, self.max_segment, chars, generator
        )
        return rows + (len(self.tokenizer) - chars), starts  # skip the special ids

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device) -> Batch:
        rows, _ = self._rows(batch_size, generator)
        rows = rows.to(device)
        return Batch((rows[:, :-1],), rows[:, 1:])

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
        return cross_entropy_loss(model, batch, label_smoothing)

    @torch.no_grad()
    def in_context_losses(self, model: nn.Module, batch_size: int = 64, seed: int = 1234) -> dict[str, float]:
        """Mean loss (nats) on the first copy of the segment (after its first token) and on
        the repeats (after the second copy's first token, whose predecessor has no earlier
        occurrence): the gap is what in-context learning buys."""
        was = model.training
        model.eval()
        generator = torch.Generator().manual_seed(seed)
        first, repeat = [], []
        device = next(model.parameters()).device
        for _ in range(self.eval_batches):
            rows, starts = self._rows(batch_size, generator)
            rows = rows.to(device)
            logits = model(rows[:, :-1])
            nll = token_nll(logits, rows[:, 1:], ignore_index=-100)  # (B, T): nll[b, t] predicts token t + 1
            for b, s in enumerate(starts.tolist()):
                first.append(nll[b, : s - 1].mean().item())  # tokens 1 .. s-1 (the first copy)
                repeat.append(nll[b, s:].mean().item())  # tokens s+1 .. end (the repeats)
        model.train(was)
        return {"loss_first_copy": float(np.mean(first)), "loss_repeat": float(np.mean(repeat))}

    def evaluate(self, model: nn.Module) -> dict[str, Any]:
        """In-context losses plus every head's previous-token and induction score."""
        was = model.training
        model.eval()
        probes = default_probe_set(self.tokenizer, "gpt", max_len=self.seq_len)
        scores = detect_heads(model, self.tokenizer, probes).scores["self"]
        model.train(was)
        return {
            **self.in_context_losses(model),
            "previous_token": np.round(scores["previous_token"], 4).tolist(),
            "induction": np.round(scores["induction"], 4).tolist(),
        }

    def snapshot(self, model: nn.Module) -> dict[str, Any]:
        was = model.training
        model.eval()
        result = trace_gpt(model, self.tokenizer, self.probe)
        model.train(was)
        return {**result.attention, "source_tokens": result.tokens}
