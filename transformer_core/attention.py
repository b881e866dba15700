"""Attention: the maths as pure functions, the plumbing as one module.

`scaled_dot_product_attention` is the readable definition. `MultiHeadAttention.forward`
runs torch's fused kernel when nothing is captured (training, generation) and the explicit
functions below when a capture object is passed; both paths are tested to agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

from transformer_core.capture import AttentionCapture, AttentionRecord
from transformer_core.errors import ConfigError
from transformer_core.positional import Rope, apply_rope


def attention_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    *,
    scale: float | None = None,
    bias: torch.Tensor | None = None,
) -> torch.Tensor:
    """Pre-softmax scores q k^T * scale + bias, shape (..., Tq, Tk).

    scale defaults to 1/sqrt(d_k): it keeps the scores' variance near 1 whatever d_k is.
    """
    d_k = q.size(-1)
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    return scores if bias is None else scores + bias


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis where masked keys (mask False) get weight exactly 0.

    A row with every key masked gets all zeros instead of NaN.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return weights.nan_to_num(0.0)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(d_k) + bias, masked) v.

    q (..., Tq, d_k), k (..., Tk, d_k), v (..., Tk, d_v); mask boolean, True = may attend,
    broadcastable to (..., Tq, Tk). Returns (output (..., Tq, d_v), weights (..., Tq, Tk)).
    """
    weights = masked_softmax(attention_scores(q, k, scale=scale, bias=bias), mask)
    return weights @ v, weights


def patch_heads(z: torch.Tensor, patch: tuple[tuple[int, torch.Tensor], ...]) -> torch.Tensor:
    """z (B, H, Tq, d_head) with head h's output replaced by value (B, Tq, d_head) or
    (Tq, d_head) for each (h, value) in patch: a new tensor, so autograd still sees z."""
    z = z.clone()
    B, _, Tq, d_head = z.shape
    for head, value in patch:
        if value.shape[-2:] != (Tq, d_head) or value.dim() == 3 and value.size(0) not in (1, B):
            raise ConfigError(
                f"head_patch: head {head} needs ({B}, {Tq}, {d_head}) values, got {tuple(value.shape)}"
            )
        z[:, head] = value.to(z.dtype)
    return z


@dataclass(frozen=True)
class AttentionSite:
    """Per-call facts one attention layer needs: which layer it is and what to apply.

    mask (bool, broadcastable to (B, H, Tq, Tk)) or None; rope = (cos, sin) (Tq, d_head/2)
    of the new tokens, applied to q and to the new k, or None; bias = ALiBi or T5 (H, Tq, Tk).
    """

    kind: str
    layer: int
    mask: torch.Tensor | None = None
    is_causal: bool = False  # hint: mask is exactly the square causal mask (fused kernel fast path)
    rope: Rope | None = None
    bias: torch.Tensor | None = None
    scale_scores: bool = True
    ablated_heads: tuple[int, ...] = ()
    capture: AttentionCapture | None = None
    gate: torch.Tensor | None = None  # (H,) or (B, H) per-call multipliers on head outputs
    patch: tuple[tuple[int, torch.Tensor], ...] = ()  # (head, (B, Tq, d_head) or (Tq, d_head)) values

    def queries(self, rows: slice) -> AttentionSite:
        """The site of the queries `rows` alone: their rows of the mask, angles and bias (patches
        are per query and stay whole, so a patched site is never split)."""
        if self.patch:
            raise ValueError("AttentionSite.queries: a patched site covers every query")
        mask = None if self.mask is None else self.mask[..., rows, :]
        rope = None if self.rope is None else (self.rope[0][rows], self.rope[1][rows])
        bias = None if self.bias is None else self.bias[..., rows, :]
        return replace(self, mask=mask, is_causal=False, rope=rope, bias=bias)


class LayerCache:
    """Keys and values of one layer seen so far (B, H, T, d_head); grows per step.

    They live in buffers of twice the length needed so far, written in place: a step copies
    its one new key and value, not all T old ones (torch.cat per step cost GPT-2 small ~3 ms
    a token on CPU)."""

    def __init__(self) -> None:
        self.length = 0
        self._k: torch.Tensor | None = None  # (B, H, capacity, d_head)
        self._v: torch.Tensor | None = None

    @property
    def k(self) -> torch.Tensor | None:
        return None if self._k is None else self._k[:, :, : self.length]  # (B, H, T, d_head), a view

    @property
    def v(self) -> torch.Tensor | None:
        return None if self._v is None else self._v[:, :, : self.length]

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append k, v (B, H, T_new, d_head); return every key and value so far (B, H, T, d_head)."""
        end = self.length + k.size(2)
        if self._k is None or self._v is None or end > self._k.size(2):
            capacity = 2 * end
            grown_k = k.new_empty(*k.shape[:2], capacity, k.size(3))  # (B, H, capacity, d_head)
            grown_v = v.new_empty(*v.shape[:2], capacity, v.size(3))
            if self._k is not None and self._v is not None:
                grown_k[:, :, : self.length] = self._k[:, :, : self.length]
                grown_v[:, :, : self.length] = self._v[:, :, : self.length]
            self._k, self._v = grown_k, grown_v
        self._k[:, :, self.length : end] = k
        self._v[:, :, self.length : end] = v
        self.length = end
        return self._k[:, :, :end], self._v[:, :, :end]

    def reorder(self, rows: torch.Tensor) -> None:
        """Keep batch rows `rows` (R,) in that order, repeats allowed: beam search's survivors."""
        if self._k is not None and self._v is not None:
            self._k, self._v = self._k.index_select(0, rows), self._v.index_select(0, rows)


class MultiHeadAttention(nn.Module):
    """Multi-head attention for self- (memory=None) and cross-attention.

    Weights are laid out like torch.nn.MultiheadAttention: in_proj (3*d_model, d_model)
    holds W_Q, W_K, W_V stacked; out_proj maps the concatenated heads back to d_model.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        self.in_proj = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout

    def forward(
        self,
        x: torch.Tensor,
        site: AttentionSite,
        memory: torch.Tensor | None = None,
        cache: LayerCache | None = None,
    ) -> torch.Tensor:
        """x (B, Tq, d_model), memory (B, Tk, d_model) for cross-attention -> (B, Tq, d_model).

        Project, place (RoPE, cache), attend — fused, or explicit when the call captures —,
        weight the heads (ablation, gates), merge them."""
        B, Tq, _ = x.shape
        q_raw, k_raw, v = self._project(x, memory)  # each (B, H, T, d_head)
        q, k = q_raw, k_raw
        if site.rope is not None:
            q, k = apply_rope(q, *site.rope), apply_rope(k, *site.rope)
        if cache is not None:
            k, v = cache.extend(k, v)  # (B, H, T_past + Tq, d_head)

        scale = 1.0 / math.sqrt(self.d_head) if site.scale_scores else 1.0
        if site.capture is None:
            out = self._fused(q, k, v, site, scale)
        else:
            out = self._explicit(q_raw, k_raw, q, k, v, site, scale)
        out = self._weigh_heads(out, site)  # (B, H, Tq, d_head)
        out = out.transpose(1, 2).reshape(B, Tq, self.d_model)  # (B, Tq, H*d_head)
        return self.out_proj(out)

    def _project(
        self, x: torch.Tensor, memory: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q from x; k and v from x (self-attention, one fused matmul) or from memory (cross)."""
        B, Tq, _ = x.shape
        if memory is None:
            qkv = self.in_proj(x).view(B, Tq, 3, self.n_heads, self.d_head)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, Tq, d_head)
            return q, k, v
        d = self.d_model
        w, b = self.in_proj.weight, self.in_proj.bias
        q = (
            F.linear(x, w[:d], None if b is None else b[:d])
            .view(B, Tq, self.n_heads, self.d_head)
            .transpose(1, 2)
        )  # (B, H, Tq, d_head)
        k, v = self._keys_values(memory)
        return q, k, v

    def _keys_values(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k and v of x (B, T, d_model), each (B, H, T, d_head): W_K and W_V alone, no query."""
        B, T, d = x.shape
        w, b = self.in_proj.weight, self.in_proj.bias
        kv = F.linear(x, w[d:], None if b is None else b[d:]).view(B, T, 2, self.n_heads, self.d_head)
        k, v = kv.permute(2, 0, 3, 1, 4)  # each (B, H, T, d_head)
        return k, v

    def prefill(self, x: torch.Tensor, site: AttentionSite, cache: LayerCache) -> None:
        """Append the keys and values of x (B, T, d_model) to the cache and compute nothing else:
        positions whose own outputs no one reads, only their keys (see GPT's last_only)."""
        k, v = self._keys_values(x)
        cache.extend(apply_rope(k, *site.rope) if site.rope is not None else k, v)

    def _explicit(
        self,
        q_raw: torch.Tensor,
        k_raw: torch.Tensor,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        site: AttentionSite,
        scale: float,
    ) -> torch.Tensor:
        """The maths written out, every intermediate handed to the call's capture."""
        scores = attention_scores(q, k, scale=scale, bias=site.bias)  # (B, H, Tq, Tk)
        weights = masked_softmax(scores, site.mask)
        assert site.capture is not None
        site.capture.add(
            AttentionRecord(
                kind=site.kind,
                layer=site.layer,
                q_raw=q_raw.detach(),
                k_raw=k_raw.detach(),
                q=q.detach(),
                k=k.detach(),
                v=v.detach(),
                scores=scores.detach(),
                mask=None if site.mask is None else site.mask.detach(),
                position_bias=None if site.bias is None else site.bias.detach(),
                weights=weights.detach(),
                scale=scale,
            )
        )
        return weights @ v  # (B, H, Tq, d_head)

    def _weigh_heads(self, out: torch.Tensor, site: AttentionSite) -> torch.Tensor:
        """Per-call head weights, never weight edits: patched heads take their given values
        (activation patching), ablated heads give 0, gates scale."""
        if site.patch:
            out = patch_heads(out, site.patch)
        if site.ablated_heads:
            keep = torch.ones(self.n_heads, device=out.device, dtype=out.dtype)
            keep[list(site.ablated_heads)] = 0.0
            out = out * keep[None, :, None, None]
        if site.gate is not None:  # (H,) or (B, H) -> broadcast over (B, H, Tq, d_head)
            gate = site.gate.to(out.dtype)
            out = out * (gate[None] if gate.dim() == 1 else gate)[:, :, None, None]
        return out

    def _fused(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, site: AttentionSite, scale: float
    ) -> torch.Tensor:
        """torch's fused kernel; the bool mask and the position bias merge into one float mask."""
        if site.is_causal and site.bias is None:
            return F.scaled_dot_product_attention(
                q,
                k,
                v,
                is_causal=True,
                dropout_p=self.dropout if self.training else 0.0,
                scale=scale,
            )
        attn_mask: torch.Tensor | None = site.mask
        if site.bias is not None:
            bias = site.bias.to(q.dtype)
            attn_mask = bias if attn_mask is None else bias.masked_fill(~attn_mask, float("-inf"))
        if attn_mask is not None and attn_mask.dim() == 3:
            # (H, Tq, Tk) -> (1, H, Tq, Tk), broadcast as before: torch's CPU kernel takes 2-D and
            # 4-D masks, and sends a 3-D one to its unfused maths path (2.5x slower)
            attn_mask = attn_mask[None]
        return F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=attn_mask,
            dropout_p=self.dropout if self.training else 0.0,
            scale=scale,
        )


class KVCache:
    """Keys and values of every layer for incremental decoding; one per generation call."""

    def __init__(self, n_layers: int) -> None:
        self.layers = [LayerCache() for _ in range(n_layers)]

    @property
    def length(self) -> int:
        return self.layers[0].length

    def keep(self, length: int) -> None:
        """Forget every position from `length` on (its buffers are overwritten by the next steps):
        e.g. a traced prompt's cache, minus the last token that sampling feeds again for its logits."""
        if not 0 <= length <= self.length:
            raise ValueError(f"keep: {length} is not between 0 and the {self.length} cached positions")
        for layer in self.layers:
            layer.length = length

    def reorder(self, rows: torch.Tensor) -> None:
        """Every layer keeps batch rows `rows` (R,): the parents of the hypotheses a beam keeps."""
        for layer in self.layers:
            layer.reorder(rows)
