"""Building blocks: norms, feed-forward networks, and the encoder/decoder blocks."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from transformer_core.attention import AttentionSite, LayerCache, MultiHeadAttention
from transformer_core.config import ModelConfig


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * gain: LayerNorm without centring or bias."""

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def make_norm(config: ModelConfig) -> nn.Module:
    if config.norm == "rmsnorm":
        return RMSNorm(config.d_model)
    return nn.LayerNorm(config.d_model)


#: elementwise activations by config name; "gelu_tanh" is GPT-2's "gelu_new" (tanh approximation)
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda h: F.gelu(h, approximate="tanh"),
}


class FeedForward(nn.Module):
    """Position-wise MLP d_model -> d_ff -> d_model with ReLU, GELU (exact or tanh) or SwiGLU.

    SwiGLU gates one projection with SiLU of another: silu(x W1) * (x W3), then W2.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.activation = config.activation
        self.w1 = nn.Linear(config.d_model, config.d_ff)
        self.w2 = nn.Linear(config.d_ff, config.d_model)
        self.w3 = nn.Linear(config.d_model, config.d_ff) if config.activation == "swiglu" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.w1(x)
        if self.w3 is not None:
            h = F.silu(h) * self.w3(x)
        else:
            h = ACTIVATIONS[self.activation](h)
        return self.w2(h)


class EncoderBlock(nn.Module):
    """Self-attention then feed-forward, each in a residual connection with a norm.

    Post-LN (Vaswani): x = norm(x + f(x)). Pre-LN (GPT-2 and later): x = x + f(norm(x)).
    This is also the GPT block: a GPT is a stack of these whose self-attention is causal.
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.pre_norm = config.norm_position == "pre"
        self.self_attn = MultiHeadAttention(
            config.d_model, config.n_heads, config.dropout, config.attention_bias
        )
        self.norm_self = make_norm(config)
        # attention-only models (config.mlp False) have no feed-forward sublayer at all
        self.ffn = FeedForward(config) if config.mlp else None
        self.norm_ffn = make_norm(config) if config.mlp else None
        self.drop = nn.Dropout(config.dropout)

    def residual(
        self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor], norm: nn.Module
    ) -> torch.Tensor:
        if self.pre_norm:
            return x + self.dropped(sublayer(norm(x)))
        return norm(x + self.dropped(sublayer(x)))

    def dropped(self, h: torch.Tensor) -> torch.Tensor:
        """Dropout on a sublayer's output while training; the output itself otherwise."""
        return self.drop(h) if self.training else h

    def forward(self, x: torch.Tensor, site: AttentionSite, cache: LayerCache | None = None) -> torch.Tensor:
        """x (B, T, d_model) -> (B, T, d_model)."""
        x = self.residual(x, lambda h: self.self_attn(h, site, cache=cache), self.norm_self)
        return self.feed_forward(x)

    def prefill(self, x: torch.Tensor, site: AttentionSite, cache: LayerCache) -> None:
        """Only the keys and values of x (B, T, d_model) into the self-attention's cache."""
        self.self_attn.prefill(self.norm_self(x) if self.pre_norm else x, site, cache)

    def feed_forward(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward sublayer in its residual connection; identity when attention-only."""
        if self.ffn is None or self.norm_ffn is None:
            return x
        return self.residual(x, self.ffn, self.norm_ffn)


class DecoderBlock(EncoderBlock):
    """Masked self-attention, cross-attention to the encoder memory, then feed-forward."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.cross_attn = MultiHeadAttention(
            config.d_model, config.n_heads, config.dropout, config.attention_bias
        )
        self.norm_cross = make_norm(config)

    def forward(  # type: ignore[override]
        self,
        x: torch.Tensor,
        site: AttentionSite,
        memory: torch.Tensor,
        cross_site: AttentionSite,
        cache: LayerCache | None = None,
    ) -> torch.Tensor:
        """x (B, Tt, d_model), memory (B, Ts, d_model) -> (B, Tt, d_model); with a cache, x holds
        the new target tokens and their self-attention keys and values are appended to it."""
        x = self.residual(x, lambda h: self.self_attn(h, site, cache=cache), self.norm_self)
        x = self.residual(x, lambda h: self.cross_attn(h, cross_site, memory), self.norm_cross)
        return self.feed_forward(x)
