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
from transformer_core.io.data import INDUCTION_PROBE, INDUCTION_SEGMENTS, INDUCTION_SEQ_LEN, induction_ids
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.losses import token_nll
from transformer_core.train.tasks import Batch, cross_entropy_loss


@dataclass(frozen=True)
class InductionTask:
    """Next-character prediction on rows of seq_len tokens: a random segment repeated."""

    tokenizer: CharTokenizer
    seq_len: int = INDUCTION_SEQ_LEN
    min_segment: int = INDUCTION_SEGMENTS[0]
    max_segment: int = INDUCTION_SEGMENTS[1]
    eval_batches: int = 4
    probe: str = INDUCTION_PROBE
    name: str = "induction"

    def rows(self, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids (B, seq_len + 1) of the model's vocabulary and each row's segment length (B,)."""
        return induction_ids(
            self.tokenizer, batch_size, generator, self.seq_len, self.min_segment, self.max_segment
        )

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device) -> Batch:
        rows, _ = self.rows(batch_size, generator)
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
            rows, starts = self.rows(batch_size, generator)
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
