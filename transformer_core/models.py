"""The models: decoder-only `GPT`, encoder-only `BERT` and encoder-decoder `Seq2Seq`.

Both take token ids and return logits. Per-call switches come in `options`
(InferenceOptions), internals go out through `capture` (AttentionCapture): neither is
stored on the module, so one model object can serve many users at once.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from transformer_core.attention import AttentionSite, KVCache, LayerCache
from transformer_core.capture import AttentionCapture
from transformer_core.config import DEFAULT_OPTIONS, AttentionKind, InferenceOptions, ModelConfig
from transformer_core.errors import ConfigError, InputError
from transformer_core.layers import DecoderBlock, EncoderBlock, make_norm
from transformer_core.masks import causal_mask, combine_masks, padding_mask, sliding_window_mask
from transformer_core.positional import POSITION_SCHEMES, PositionScheme, Rope
from transformer_core.recurrent import RecurrentSeq2Seq
from transformer_core.vocab import PAD_ID


class TokenEmbedding(nn.Embedding):
    """Token vectors, scaled by sqrt(d_model) (Vaswani) unless `scale` is False (GPT-2 and
    nanoGPT add them unscaled). Scaled: initialised so that the scaled vectors have unit
    variance per coordinate, like the sinusoidal codes they meet; unscaled: GPT-2's std 0.02."""

    def __init__(self, vocab_size: int, d_model: int, scale: bool = True) -> None:
        super().__init__(vocab_size, d_model)
        self.scale = math.sqrt(d_model) if scale else None
        nn.init.normal_(self.weight, std=d_model**-0.5 if scale else 0.02)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = super().forward(ids)
        return x if self.scale is None else x * self.scale


def _check_ids(ids: torch.Tensor, vocab_size: int, what: str) -> None:
    if ids.dim() != 2 or ids.size(1) == 0:
        raise InputError(f"{what}: expected token ids of shape (batch, time>0), got {tuple(ids.shape)}")
    if ids.min() < 0 or ids.max() >= vocab_size:
        raise InputError(f"{what}: token ids must lie in [0, {vocab_size})")


def _site(
    kind: AttentionKind,
    layer: int,
    options: InferenceOptions,
    capture: AttentionCapture | None,
    mask: torch.Tensor | None,
    *,
    is_causal: bool = False,
    rope: Rope | None = None,
    bias: torch.Tensor | None = None,
) -> AttentionSite:
    """The per-call facts of one attention layer: its mask and positions plus what every
    layer takes from the options (scaling, ablated heads) and the capture."""
    return AttentionSite(
        kind,
        layer,
        mask=mask,
        is_causal=is_causal,
        rope=rope,
        bias=bias,
        scale_scores=options.scale_scores,
        ablated_heads=tuple(options.ablated_heads(kind, layer)),
        capture=capture,
        gate=None if options.head_gates is None else options.head_gates.for_layer(kind, layer),
        patch=() if options.head_patch is None else options.head_patch.for_layer(kind, layer),
    )


class _Transformer(nn.Module):
    """What GPT and Seq2Seq share: dropout after the embeddings and the one stack runner."""

    config: ModelConfig
    drop: nn.Dropout

    def _run_stack(
        self,
        ids: torch.Tensor,
        kind: AttentionKind,
        embed: TokenEmbedding,
        scheme: PositionScheme,
        blocks: nn.ModuleList,
        *,
        options: InferenceOptions,
        capture: AttentionCapture | None,
        causal: bool,
        pad_keys: bool,
        positions: torch.Tensor | None = None,
        cache: KVCache | None = None,
        memory: torch.Tensor | None = None,
        memory_ids: torch.Tensor | None = None,
        last_only: bool = False,
    ) -> torch.Tensor:
        """ids (B, T) -> hidden states (B, T, d_model) after every block (before the final norm);
        last_only: (B, 1, d_model) of the last position, whose block alone is all that is read.

        The preamble every stack shares, written once: positions -> token embeddings plus
        absolute codes -> RoPE angles / position bias -> masks -> blocks. `causal` and
        `pad_keys` say whether this stack's self-attention is causal and hides PAD keys;
        the options can switch either off. positions (T,) replaces 0..T-1 (randomized
        positions); with a cache (default positions), ids are the new tokens after
        cache.length old ones, and are never PAD (no padding mask on their keys).
        With memory (B, Ts, d_model) the blocks are decoder blocks that also attend to it,
        hiding the PAD keys of memory_ids (B, Ts).
        """
        T, device = ids.size(1), ids.device
        past = 0 if cache is None else cache.length
        q_pos = torch.arange(past, past + T, device=device) if positions is None else positions
        k_pos = torch.arange(past + T, device=device) if positions is None else positions
        x = embed(ids)  # (B, T, d_model)
        rope, bias = None, None
        if options.positions:
            codes = scheme.codes(q_pos)
            x = x if codes is None else x + codes.to(x.dtype)
            rope, bias = scheme.rotation(q_pos), scheme.bias(q_pos, k_pos)
        x = self.drop(x)

        causal = causal and options.causal and T > 1  # one query, the last position, sees every key
        pad_keys = pad_keys and options.padding_mask
        pad_self = pad_keys and cache is None  # cached decoding feeds real tokens only
        window = options.sliding_window
        mask = combine_masks(
            padding_mask(ids, PAD_ID) if pad_self else None,
            causal_mask(T, past + T, device=device) if causal else None,
            sliding_window_mask(T, past + T, window, device=device) if window else None,
        )
        # exactly the square causal mask: the fused kernel can skip building it
        is_causal = causal and not pad_self and not window and past == 0
        if bias is not None and mask is not None and capture is None:
            # every layer's fused kernel takes one float mask: the mask put into the bias once
            bias, mask = bias.masked_fill(~mask, float("-inf")), None  # (H or B, H, Tq, Tk)
        cross_mask = padding_mask(memory_ids, PAD_ID) if pad_keys and memory_ids is not None else None
        # the last block's queries, attention and feed-forward for the last position only: the
        # earlier positions give it their keys and values, as a cached decoding step would have them
        last_query = last_only and T > 1 and capture is None and memory is None and options.head_patch is None
        for i, block in enumerate(blocks):
            if capture is not None:  # the residual stream entering block i, e.g. 'self.0.resid_pre'
                capture.add_residual(f"{kind}.{i}.resid_pre", x)
            site = _site(kind, i, options, capture, mask, is_causal=is_causal, rope=rope, bias=bias)
            layer_cache = None if cache is None else cache.layers[i]
            if last_query and i == len(blocks) - 1:
                layer_cache = LayerCache() if layer_cache is None else layer_cache
                block.prefill(x[:, :-1], site.queries(slice(None, -1)), layer_cache)
                x = block(x[:, -1:], site.queries(slice(-1, None)), cache=layer_cache)  # (B, 1, d_model)
            elif memory is None:
                x = block(x, site, cache=layer_cache)
            else:
                x = block(x, site, memory, _site("cross", i, options, capture, cross_mask), layer_cache)
            if capture is not None:
                capture.add_residual(f"{kind}.{i}.resid_post", x)
        return x


class GPT(_Transformer):
    """Decoder-only Transformer language model: embeddings, causal blocks, LM head."""

    arch = "gpt"
    causal = True  # each position sees itself and the past: it predicts the next token

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.arch != self.arch:
            raise ConfigError(f"arch: {type(self).__name__} needs arch={self.arch!r}, got {config.arch!r}")
        self.config = config
        self.tok_emb = TokenEmbedding(config.vocab_size, config.d_model, config.scale_embedding)
        self.positions = POSITION_SCHEMES[config.positions](config, causal=self.causal)
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
        last_only: bool = False,
    ) -> torch.Tensor:
        """idx (B, T) token ids -> logits (B, T, vocab_size). With a cache, idx holds only
        the new tokens and their keys/values are appended to it. last_only: logits of the last
        position only, (B, 1, vocab_size): what sampling needs (GPT-2's unembedding is 39M
        multiply-adds per position, a third of a 64-token forward pass)."""
        _check_ids(idx, self.config.vocab_size, "GPT input")
        x = self._run_stack(
            idx,
            "self",
            self.tok_emb,
            self.positions,
            self.blocks,
            options=options,
            capture=capture,
            causal=self.causal,
            pad_keys=False,  # right padding only ever follows real tokens under the causal mask
            cache=cache,
            last_only=last_only,
        )
        if last_only:
            x = x[:, -1:]  # (B, T, d_model) -> (B, 1, d_model): a no-op unless the stack kept every position
        return self.lm_head(self.final_norm(x))

    def new_cache(self) -> KVCache:
        return KVCache(len(self.blocks))

    @torch.no_grad()
    def position_codes(self, num_positions: int) -> torch.Tensor | None:
        """(num_positions, d_model) codes added to the embeddings at positions 0..n-1, or
        None when the scheme is relative or none: what the lessons plot, read in one place."""
        return self.positions.codes(torch.arange(num_positions, device=self.lm_head.weight.device))


class BERT(GPT):
    """Encoder-only masked-language model (Devlin et al. 2019): GPT's stack without the causal
    mask, so every position sees both sides; the LM head guesses the tokens hidden behind the
    vocabulary's mask token (`transformer_core.train.mlm`). Its self-attention is kind "self"."""

    arch = "bert"
    causal = False

    def new_cache(self) -> KVCache:
        raise ConfigError("cache: a bidirectional model reads every position at once; it has no KV cache")


class Seq2Seq(_Transformer):
    """Encoder-decoder Transformer (Vaswani et al.): the decoder reads the encoder's
    memory through cross-attention. RoPE, ALiBi and T5 act in self-attention only."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.arch != "seq2seq" or config.model != "transformer":
            raise ConfigError(
                "arch: Seq2Seq needs arch='seq2seq', model='transformer', "
                f"got {config.arch!r}, {config.model!r}"
            )
        self.config = config
        self.src_emb = TokenEmbedding(config.vocab_size, config.d_model, config.scale_embedding)
        self.tgt_emb = TokenEmbedding(config.vocab_size, config.d_model, config.scale_embedding)
        scheme = POSITION_SCHEMES[config.positions]
        self.src_positions = scheme(config, causal=False)
        self.tgt_positions = scheme(config, causal=True)
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
        x = self._run_stack(
            src,
            "encoder_self",
            self.src_emb,
            self.src_positions,
            self.encoder,
            options=options,
            capture=capture,
            causal=False,
            pad_keys=True,
            positions=positions,
        )
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
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """tgt (B, Tt) ids starting with SOS, memory (B, Ts, d_model), src (B, Ts) for its
        padding -> logits (B, Tt, vocab_size). positions (Tt,) as in `encode`. With a cache
        (see `new_cache`), tgt holds only the new tokens, none of them PAD."""
        _check_ids(tgt, self.config.vocab_size, "target")
        x = self._run_stack(
            tgt,
            "decoder_self",
            self.tgt_emb,
            self.tgt_positions,
            self.decoder,
            options=options,
            capture=capture,
            causal=True,
            pad_keys=True,
            positions=positions,
            cache=cache,
            memory=memory,
            memory_ids=src,
        )
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

    def new_cache(self) -> KVCache:
        """An empty cache of the decoder's self-attention keys and values."""
        return KVCache(len(self.decoder))

    @torch.no_grad()
    def position_codes(self, num_positions: int) -> torch.Tensor | None:
        """(num_positions, d_model) codes the encoder adds to the source embeddings at
        positions 0..n-1, or None when the scheme is relative or none (as `GPT.position_codes`)."""
        return self.src_positions.codes(torch.arange(num_positions, device=self.lm_head.weight.device))


Model = GPT | BERT | Seq2Seq | RecurrentSeq2Seq
EncoderDecoder = Seq2Seq | RecurrentSeq2Seq  # what reverses strings: encode, decode, forward(src, tgt)

#: (config.arch, config.model) -> the class built for it; a new model kind is a line here
MODEL_CLASSES: dict[tuple[str, str], type[Model]] = {
    ("gpt", "transformer"): GPT,
    ("bert", "transformer"): BERT,
    ("seq2seq", "transformer"): Seq2Seq,
    ("seq2seq", "gru"): RecurrentSeq2Seq,
    ("seq2seq", "bahdanau"): RecurrentSeq2Seq,
}


def build_model(config: ModelConfig) -> Model:
    if (config.arch, config.model) not in MODEL_CLASSES:
        raise ConfigError(f"model: no {config.model!r} model of arch {config.arch!r}")
    return MODEL_CLASSES[config.arch, config.model](config)


def require_transformer(model: nn.Module, what: str) -> None:
    """ConfigError for a tool that reads attention heads when `model` is recurrent."""
    if isinstance(model, RecurrentSeq2Seq):
        raise ConfigError(
            f"{what}: {model.config.model!r} is a recurrent model with one additive attention "
            "(or none), not Transformer heads; use `trace` to see its alignment"
        )


def require_next_token(model: nn.Module, what: str) -> None:
    """ConfigError for a tool that scores next-token prediction when `model` is a masked LM."""
    if isinstance(model, BERT):
        raise ConfigError(
            f"{what}: a masked language model guesses hidden tokens, not the next one this command "
            "needs; `trace` with [MASK] in the text (and the /bert page) shows what it guesses and its heads"
        )


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
