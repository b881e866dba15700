"""The two models: decoder-only `GPT` and encoder-decoder `Seq2Seq`.

Both take token ids and return logits. Per-call switches come in `options`
(InferenceOptions), internals go out through `capture` (AttentionCapture): neither is
stored on the module, so one model object can serve many users at once.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from transformer_core.attention import AttentionSite, KVCache
from transformer_core.capture import AttentionCapture
from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions, ModelConfig
from transformer_core.errors import ConfigError, InputError
from transformer_core.io.tokenizer import PAD_ID
from transformer_core.layers import DecoderBlock, EncoderBlock, make_norm
from transformer_core.masks import causal_mask, combine_masks, padding_mask, sliding_window_mask
from transformer_core.positional import (
    alibi_bias,
    alibi_slopes,
    rope_angles,
    sinusoidal_positional_encoding,
)

Rope = tuple[torch.Tensor, torch.Tensor]


class PositionalScheme(nn.Module):
    """One positional scheme. Absolute ones add to embeddings (`embed`); relative ones
    give RoPE angles for q/k or an ALiBi bias for the scores (`relative`)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.scheme, self.max_len, self.d_model = config.positions, config.max_len, config.d_model
        self.d_head = config.d_head
        if self.scheme == "learned":
            self.table = nn.Embedding(config.max_len, config.d_model)
            nn.init.normal_(self.table.weight, std=0.1)
        if self.scheme == "sinusoidal":
            table = sinusoidal_positional_encoding(config.max_len, config.d_model)
            self.register_buffer("sinusoid", table, persistent=False)
        if self.scheme == "alibi":
            self.register_buffer("slopes", alibi_slopes(config.n_heads), persistent=False)

    def embed(self, x: torch.Tensor, positions: torch.Tensor, enabled: bool) -> torch.Tensor:
        """x (B, T, d_model) plus the absolute code of each position (T,)."""
        if not enabled or self.scheme not in ("learned", "sinusoidal"):
            return x
        last = int(positions[-1]) + 1
        if self.scheme == "learned":
            if last > self.max_len:
                raise InputError(
                    f"input needs {last} positions but learned positions stop at "
                    f"{self.max_len}: there is no embedding beyond the trained table"
                )
            return x + self.table(positions)
        table = self.sinusoid
        if last > table.size(0):  # the formula is defined for any position
            table = sinusoidal_positional_encoding(last, self.d_model, device=x.device)
        return x + table[positions].to(x.dtype)

    def relative(
        self, q_positions: torch.Tensor, k_positions: torch.Tensor, enabled: bool
    ) -> tuple[Rope | None, torch.Tensor | None]:
        """(RoPE angles of the new tokens, ALiBi bias (H, Tq, Tk)); None where unused.

        In self-attention the new tokens give both the queries and the new keys (cached
        keys were rotated when they were new), so one set of angles serves both.
        """
        if not enabled:
            return None, None
        if self.scheme == "rope":
            return rope_angles(q_positions, self.d_head), None
        if self.scheme == "alibi":
            return None, alibi_bias(self.slopes, q_positions, k_positions)
        return None, None


class TokenEmbedding(nn.Embedding):
    """Token vectors scaled by sqrt(d_model) (Vaswani), initialised so that the scaled
    vectors have unit variance per coordinate, like the sinusoidal codes they meet."""

    def __init__(self, vocab_size: int, d_model: int) -> None:
        super().__init__(vocab_size, d_model)
        nn.init.normal_(self.weight, std=d_model**-0.5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return super().forward(ids) * math.sqrt(self.embedding_dim)


def _self_attention_mask(
    num_queries: int, num_keys: int, causal: bool, window: int | None, device: torch.device
) -> torch.Tensor | None:
    return combine_masks(
        causal_mask(num_queries, num_keys, device=device) if causal else None,
        sliding_window_mask(num_queries, num_keys, window, device=device) if window else None,
    )


def _site(
    kind: str, layer: int, options: InferenceOptions, capture: AttentionCapture | None, **facts: object
) -> AttentionSite:
    """The per-call facts of one attention layer: its masks and positions (`facts`) plus
    what every layer takes from the options (scaling, ablated heads) and the capture."""
    return AttentionSite(
        kind,
        layer,
        scale_scores=options.scale_scores,
        ablated_heads=tuple(options.ablated_heads(kind, layer)),
        capture=capture,
        **facts,  # type: ignore[arg-type]
    )


def _check_ids(ids: torch.Tensor, vocab_size: int, what: str) -> None:
    if ids.dim() != 2 or ids.size(1) == 0:
        raise InputError(f"{what}: expected token ids of shape (batch, time>0), got {tuple(ids.shape)}")
    if ids.min() < 0 or ids.max() >= vocab_size:
        raise InputError(f"{what}: token ids must lie in [0, {vocab_size})")


class GPT(nn.Module):
    """Decoder-only Transformer language model: embeddings, causal blocks, LM head."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.arch != "gpt":
            raise ConfigError(f"arch: GPT needs arch='gpt', got {config.arch!r}")
        self.config = config
        self.tok_emb = TokenEmbedding(config.vocab_size, config.d_model)
        self.positions = PositionalScheme(config)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))
        self.final_norm = make_norm(config) if config.norm_position == "pre" else nn.Identity()
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.tok_emb.weight

    def forward(
        self,
        idx: torch.Tensor,
        *,
        options: InferenceOptions = DEFAULT_OPTIONS,
        capture: AttentionCapture | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """idx (B, T) token ids -> logits (B, T, vocab_size). With a cache, idx holds only
        the new tokens and their keys/values are appended to it."""
        _check_ids(idx, self.config.vocab_size, "GPT input")
        B, T = idx.shape
        past = cache.length if cache is not None else 0
        device = idx.device
        q_pos = torch.arange(past, past + T, device=device)
        k_pos = torch.arange(past + T, device=device)
        x = self.drop(self.positions.embed(self.tok_emb(idx), q_pos, options.positions))
        rope, bias = self.positions.relative(q_pos, k_pos, options.positions)
        mask = _self_attention_mask(T, past + T, options.causal, options.sliding_window, device)
        square_causal = options.causal and not options.sliding_window and past == 0
        for i, block in enumerate(self.blocks):
            site = _site(
                "self",
                i,
                options,
                capture,
                mask=mask,
                is_causal=square_causal,
                rope=rope,
                bias=bias,
            )
            x = block(x, site, cache=None if cache is None else cache.layers[i])
        return self.lm_head(self.final_norm(x))

    def new_cache(self) -> KVCache:
        return KVCache(len(self.blocks))


class Seq2Seq(nn.Module):
    """Encoder-decoder Transformer (Vaswani et al.): the decoder reads the encoder's
    memory through cross-attention. RoPE and ALiBi act in self-attention only."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.arch != "seq2seq":
            raise ConfigError(f"arch: Seq2Seq needs arch='seq2seq', got {config.arch!r}")
        self.config = config
        self.src_emb = TokenEmbedding(config.vocab_size, config.d_model)
        self.tgt_emb = TokenEmbedding(config.vocab_size, config.d_model)
        self.src_positions = PositionalScheme(config)
        self.tgt_positions = PositionalScheme(config)
        self.drop = nn.Dropout(config.dropout)
        self.encoder = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_layers))
        self.decoder = nn.ModuleList(DecoderBlock(config) for _ in range(config.n_layers))
        pre = config.norm_position == "pre"
        self.encoder_norm = make_norm(config) if pre else nn.Identity()
        self.decoder_norm = make_norm(config) if pre else nn.Identity()
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.tgt_emb.weight

    def encode(
        self,
        src: torch.Tensor,
        *,
        options: InferenceOptions = DEFAULT_OPTIONS,
        capture: AttentionCapture | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """src (B, Ts) ids, PAD-padded on the right -> memory (B, Ts, d_model).

        positions (Ts,) replaces 0..Ts-1: randomized positional encodings train with an
        increasing random subset of a larger range (Ruoss et al., 2023)."""
        _check_ids(src, self.config.vocab_size, "source")
        Ts = src.size(1)
        pos = torch.arange(Ts, device=src.device) if positions is None else positions
        x = self.drop(self.src_positions.embed(self.src_emb(src), pos, options.positions))
        rope, bias = self.src_positions.relative(pos, pos, options.positions)
        mask = combine_masks(
            padding_mask(src, PAD_ID) if options.padding_mask else None,
            _self_attention_mask(Ts, Ts, False, options.sliding_window, src.device),
        )
        for i, block in enumerate(self.encoder):
            site = _site(
                "encoder_self",
                i,
                options,
                capture,
                mask=mask,
                rope=rope,
                bias=bias,
            )
            x = block(x, site)
        return self.encoder_norm(x)

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src: torch.Tensor,
        *,
        options: InferenceOptions = DEFAULT_OPTIONS,
        capture: AttentionCapture | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """tgt (B, Tt) ids starting with SOS, memory (B, Ts, d_model), src (B, Ts) for its
        padding -> logits (B, Tt, vocab_size). positions (Tt,) as in `encode`."""
        _check_ids(tgt, self.config.vocab_size, "target")
        Tt = tgt.size(1)
        pos = torch.arange(Tt, device=tgt.device) if positions is None else positions
        x = self.drop(self.tgt_positions.embed(self.tgt_emb(tgt), pos, options.positions))
        rope, bias = self.tgt_positions.relative(pos, pos, options.positions)
        self_mask = combine_masks(
            padding_mask(tgt, PAD_ID) if options.padding_mask else None,
            _self_attention_mask(Tt, Tt, options.causal, options.sliding_window, tgt.device),
        )
        cross_mask = padding_mask(src, PAD_ID) if options.padding_mask else None
        for i, block in enumerate(self.decoder):
            site = _site(
                "decoder_self",
                i,
                options,
                capture,
                mask=self_mask,
                rope=rope,
                bias=bias,
            )
            cross = _site(
                "cross",
                i,
                options,
                capture,
                mask=cross_mask,
            )
            x = block(x, site, memory, cross)
        return self.lm_head(self.decoder_norm(x))

    def forward(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        *,
        options: InferenceOptions = DEFAULT_OPTIONS,
        capture: AttentionCapture | None = None,
        src_positions: torch.Tensor | None = None,
        tgt_positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Teacher-forced logits (B, Tt, vocab_size) for target inputs tgt given src."""
        memory = self.encode(src, options=options, capture=capture, positions=src_positions)
        return self.decode(tgt, memory, src, options=options, capture=capture, positions=tgt_positions)


def build_model(config: ModelConfig) -> GPT | Seq2Seq:
    return GPT(config) if config.arch == "gpt" else Seq2Seq(config)


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
