"""Next-token cross-entropy over targets that may hold padding: the one home of that maths.

Why one: training, evaluation, ablation and the induction probe all score "how surprised was
the model by the next token", and each used to write its own F.cross_entropy call.
Logits are upcast to float32, so the loss is exact under autocast too.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from transformer_core.vocab import PAD_ID


def token_nll(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = PAD_ID) -> torch.Tensor:
    """Per-position negative log-likelihood (nats): logits (B, T, V), targets (B, T) -> (B, T);
    0 where the target is `ignore_index` (padding)."""
    return F.cross_entropy(
        logits.float().transpose(1, 2), targets, ignore_index=ignore_index, reduction="none"
    )


def mean_token_nll(
    logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = PAD_ID, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Mean next-token cross-entropy over every target that is not `ignore_index` (a scalar),
    optionally label-smoothed: logits (B, T, V), targets (B, T)."""
    return F.cross_entropy(
        logits.flatten(0, 1).float(),  # (B*T, V)
        targets.flatten(),  # (B*T,)
        ignore_index=ignore_index,
        label_smoothing=label_smoothing,
    )


def perplexity(nats: float) -> float:
    """exp(mean cross-entropy in nats per token): the number of equally likely tokens that
    would leave the model as unsure as it is (chapter 001's effective branching factor).
    inf past float range; a loss in bits would be 2 ** bits instead."""
    nats = float(nats)
    if math.isnan(nats) or nats < 0:
        raise ValueError(f"perplexity: a cross-entropy is a number >= 0 nats, got {nats}")
    return math.exp(nats) if nats < 700 else math.inf
