"""Attention rollout (Abnar & Zuidema 2020) and the logit lens (nostalgebraist 2020).

Why: a single head's pattern says where one layer looks; rollout composes every layer's
attention (with the residual connection) to estimate how much each input token flows into
each position, and the logit lens reads what the residual stream predicts after each layer.
Maths in pure functions; `rollout_of` and `logit_lens` run a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.models import GPT, Seq2Seq
from transformer_core.vocab import EOS_ID


def attention_rollout(weights: np.ndarray, residual: float = 0.5) -> np.ndarray:
    """Rollout of self-attention weights (L, H, T, T) -> (T, T).

    Per layer: A_l = mean over heads, then Â_l = residual * I + (1 - residual) * A_l (the skip
    connection), rows renormalised; rollout = Â_{L-1} ... Â_1 Â_0. Row i says how much of
    position i's final state comes from each input token (rows sum to 1).
    """
    w = np.asarray(weights, dtype=np.float64)
    t = w.shape[-1]
    eye = np.eye(t)
    out = eye
    for layer in w:
        a = residual * eye + (1.0 - residual) * layer.mean(0)
        a = a / a.sum(-1, keepdims=True)
        out = a @ out
    return out


@torch.no_grad()
def rollout_of(model: GPT | Seq2Seq, ids: list[int], residual: float = 0.5) -> np.ndarray:
    """Rollout (T, T) of a GPT's causal self-attention, or of a Seq2Seq encoder, on one
    sequence of token ids (the encoder gets ids + EOS, as it was trained)."""

    device = next(model.parameters()).device
    cap = AttentionCapture()
    if isinstance(model, GPT):
        model(torch.tensor([ids], device=device), capture=cap)
        w = cap.weights("self")
    else:
        model.encode(torch.tensor([[*ids, EOS_ID]], device=device), capture=cap)
        w = cap.weights("encoder_self")
    return attention_rollout(w.float().cpu().numpy(), residual)


@dataclass(frozen=True)
class LogitLens:
    """What the residual stream predicts after each layer. Rows: 'embed' (before block 0),
    then 'layer 0' .. 'layer L-1' (the last equals the model's own prediction).
    top_ids / top_probs (L+1, T, k): the k likeliest next tokens per row and position;
    tokens: the input's labels. correct_probs (L+1, T): each row's probability of the token
    that truly comes next (ids[t+1]); NaN at the last position, whose next token is unknown."""

    rows: list[str]
    tokens: list[str]
    top_ids: np.ndarray
    top_probs: np.ndarray
    top_labels: list[list[list[str]]]
    correct_probs: np.ndarray


def correct_token_probs(probs: torch.Tensor, ids: list[int]) -> np.ndarray:
    """probs (rows, T, V) -> (rows, T): probs[r, t, ids[t+1]], NaN at t = T-1 (no next token)."""
    out = np.full(probs.shape[:2], np.nan)
    if len(ids) > 1:
        nxt = torch.tensor(ids[1:], device=probs.device)
        out[:, :-1] = probs[:, :-1].gather(-1, nxt.expand(probs.size(0), -1)[..., None])[..., 0].cpu().numpy()
    return out


def lens_logits(model: GPT, residuals: list[torch.Tensor]) -> torch.Tensor:
    """Each residual stream (B, T, d_model) through the final norm and unembedding:
    -> (n, B, T, V). The same two maps the model applies after its last block."""
    return torch.stack([model.lm_head(model.final_norm(r)) for r in residuals])


@torch.no_grad()
def logit_lens(model: GPT, tokenizer: Tokenizer, ids: list[int], k: int = 5) -> LogitLens:
    """Top-k next characters at every layer and position of one GPT input (ids)."""
    device = next(model.parameters()).device
    cap = AttentionCapture()
    model(torch.tensor([ids], device=device), capture=cap)
    n = model.config.n_layers
    resid = [cap.residuals["self.0.resid_pre"]] + [cap.residuals[f"self.{i}.resid_post"] for i in range(n)]
    probs = torch.softmax(lens_logits(model, resid)[:, 0].float(), dim=-1)  # (L+1, T, V)
    top = probs.topk(min(k, probs.size(-1)), dim=-1)
    top_ids = top.indices.cpu().numpy()
    labels = [[tokenizer.token_labels(list(map(int, pos))) for pos in row] for row in top_ids]
    return LogitLens(
        rows=["embed", *(f"layer {i}" for i in range(n))],
        tokens=tokenizer.token_labels(ids),
        top_ids=top_ids,
        top_probs=top.values.cpu().numpy(),
        top_labels=labels,
        correct_probs=correct_token_probs(probs, ids),
    )
