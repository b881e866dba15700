"""Head importance: the exact ablation sweep and the gradient proxy, side by side.

Why: a detector says what a head does, importance says whether the model needs it. The
sweep is exact (one forward per head, each head zeroed alone via InferenceOptions.ablate);
the proxy of Michel et al. 2019 (|d loss / d gate| per head, gates all ones) costs one
backward pass and is what one would use on a model too large to sweep.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer_core.config import DEFAULT_OPTIONS, HeadGates, InferenceOptions
from transformer_core.errors import InputError
from transformer_core.io.data import reversal_batch
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.losses import mean_token_nll, token_nll
from transformer_core.models import GPT, Seq2Seq
from transformer_core.vocab import PAD_ID, SOS_ID

IGNORE = -100  # a target nothing predicts (padding): never a token id, whatever the vocabulary
GPT_KINDS = ("self",)
SEQ2SEQ_KINDS = ("encoder_self", "decoder_self", "cross")


@dataclass(frozen=True)
class ProbeBatch:
    """Inputs and next-token targets of a probe batch. GPT: inputs (ids (B, T),), targets
    (B, T) with IGNORE where nothing is predicted (an imported model's id 0 is a real token).
    Seq2Seq: inputs (src, tgt_in), targets tgt_out with PAD as IGNORE, and `reversed_ids` the
    true outputs for exact match."""

    inputs: tuple[torch.Tensor, ...]
    targets: torch.Tensor
    reversed_ids: tuple[tuple[int, ...], ...] | None = None


def gpt_probe_batch(sequences: Sequence[Sequence[int]], device: torch.device | str = "cpu") -> ProbeBatch:
    """Token-id sequences (each >= 2 long) -> inputs seq[:-1], targets seq[1:], right-padded:
    under the causal mask padding after a sequence never changes its earlier positions."""
    rows = [list(s) for s in sequences if len(s) >= 2]
    if not rows:
        raise InputError(  # a probe text of one known character (the others are dropped)
            "The probe text has fewer than 2 characters this model knows (the others are dropped): "
            "type a longer one."
        )
    width = max(len(r) for r in rows) - 1
    x = [r[:-1] + [PAD_ID] * (width - len(r) + 1) for r in rows]
    y = [r[1:] + [IGNORE] * (width - len(r) + 1) for r in rows]
    return ProbeBatch((torch.tensor(x, device=device),), torch.tensor(y, device=device))


def reversal_probe_batch(
    tokenizer: CharTokenizer, texts: Sequence[str], device: torch.device | str = "cpu"
) -> ProbeBatch:
    """Source texts -> teacher-forced reversal batch plus the true outputs for exact match."""
    rb = reversal_batch(tokenizer, list(texts), device)
    truth = tuple(tuple(tokenizer.encode(t[::-1])) for t in texts)
    return ProbeBatch((rb.src, rb.tgt_in), rb.tgt_out.masked_fill(rb.tgt_out == PAD_ID, IGNORE), truth)


def per_sequence_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy of each row (nats): logits (B, T, V), targets (B, T) -> (B,)."""
    nll = token_nll(logits, targets, ignore_index=IGNORE)  # (B, T)
    keep = (targets != IGNORE).float()
    return (nll * keep).sum(1) / keep.sum(1).clamp_min(1.0)


def batch_loss(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Mean next-token cross-entropy over every predicted token of the batch (nats)."""
    return float(mean_token_nll(logits, targets, ignore_index=IGNORE))


def exact_match_rows(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B,) bool: every teacher-forced argmax (PAD and SOS excluded, as greedy decoding
    excludes them) equals its target up to and including EOS.

    This is exactly greedy exact match: if greedy decoding writes the truth, each step saw the
    true prefix, so the teacher-forced argmax is right everywhere; conversely a right argmax at
    every true prefix makes greedy decoding write the truth. One forward instead of a loop."""
    logits = logits.float().clone()
    logits[..., PAD_ID] = float("-inf")
    logits[..., SOS_ID] = float("-inf")
    right = (logits.argmax(-1) == targets) | (targets == IGNORE)
    return right.all(-1)


def kinds_of(model: GPT | Seq2Seq) -> tuple[str, ...]:
    return GPT_KINDS if isinstance(model, GPT) else SEQ2SEQ_KINDS


@dataclass(frozen=True)
class Importance:
    """Per kind (L, H) arrays. delta_loss = loss with the head ablated - base loss (nats);
    delta_exact_match likewise for reversal (None for a GPT); gradient = mean over probe
    sequences of |d loss / d gate| (Michel et al. 2019); data: what the probe batch was, in
    words for people."""

    base_loss: float
    base_exact_match: float | None
    delta_loss: dict[str, np.ndarray]
    delta_exact_match: dict[str, np.ndarray] | None
    gradient: dict[str, np.ndarray]
    data: str = ""


@torch.no_grad()
def ablation_sweep(
    model: GPT | Seq2Seq,
    batch: ProbeBatch,
    base: InferenceOptions = DEFAULT_OPTIONS,
    exact_match: bool = True,
) -> tuple[float, float | None, dict[str, np.ndarray], dict[str, np.ndarray] | None]:
    """Each head ablated alone: (base loss, base exact match, delta loss per kind (L, H),
    delta exact match per kind (L, H) or None). One forward per head, no weight is touched."""
    L, H = model.config.n_layers, model.config.n_heads
    do_em = exact_match and isinstance(model, Seq2Seq)

    def measure(options: InferenceOptions) -> tuple[float, float | None]:
        logits = model(*batch.inputs, options=options)
        em = float(exact_match_rows(logits, batch.targets).float().mean()) if do_em else None
        return batch_loss(logits, batch.targets), em

    base_loss, base_em = measure(base)
    d_loss = {k: np.zeros((L, H)) for k in kinds_of(model)}
    d_em = {k: np.zeros((L, H)) for k in kinds_of(model)} if do_em else None
    for kind in kinds_of(model):
        for layer in range(L):
            for head in range(H):
                opts = dataclasses.replace(base, ablate=base.ablate | {(kind, layer, head)})
                loss, em = measure(opts)
                d_loss[kind][layer, head] = loss - base_loss
                if d_em is not None and em is not None and base_em is not None:
                    d_em[kind][layer, head] = em - base_em
    return base_loss, base_em, d_loss, d_em


def gradient_importance(model: GPT | Seq2Seq, batch: ProbeBatch) -> dict[str, np.ndarray]:
    """Michel et al. 2019: I_h = E_x |d L(x) / d xi_h| at gates xi = 1, per kind (L, H).

    One gate per head and batch row (B, L, H), so one backward of the summed per-sequence
    losses gives each sequence's own gradient. The model is not touched (no .grad written)."""
    L, H = model.config.n_layers, model.config.n_heads
    B = batch.targets.size(0)
    device = batch.targets.device
    gates = {k: torch.ones(B, L, H, device=device, requires_grad=True) for k in kinds_of(model)}
    options = InferenceOptions(head_gates=HeadGates(gates))
    with torch.enable_grad():  # autograd.grad: only the gates get gradients, no .grad is written
        logits = model(*batch.inputs, options=options)
        per_seq = per_sequence_loss(logits, batch.targets)
        grads = torch.autograd.grad(per_seq.sum(), list(gates.values()))
    return {k: g.abs().mean(0).cpu().numpy() for k, g in zip(gates, grads, strict=True)}


def head_importance(
    model: GPT | Seq2Seq, batch: ProbeBatch, exact_match: bool = True, data: str = ""
) -> Importance:
    """The ablation sweep and the gradient proxy on the same probe batch (described by `data`)."""
    base_loss, base_em, d_loss, d_em = ablation_sweep(model, batch, exact_match=exact_match)
    return Importance(base_loss, base_em, d_loss, d_em, gradient_importance(model, batch), data)
