"""Why a head attends: its pre-softmax score split into what each part of the residual stream
contributes on the query side and on the key side (QK attribution).

A pre-LN block's attention reads norm(x) where x, the residual stream, is a sum of parts: the
token embedding, the absolute position codes (where the scheme adds them), every earlier head's
output z_h W_O^h, every earlier MLP's output, and the output projections' biases. With the
norm's scale frozen at its value in this forward pass (as direct logit attribution freezes the
final norm's), the norm is linear, and so are W_Q, W_K and RoPE's rotation. So

    score(i, j) = sum over query parts a and key parts b of  scale * q_a(i) . k_b(j)
                  + position(i, j)

where q_a(i) = R_i (norm_a(x_a(i)) W_Q^h), k_b likewise, the norm's shift and b_Q, b_K go into the
"bias" part, and position(i, j) is ALiBi's or T5's bias (0 for the other schemes). The parts sum
to the captured score (checked by `check_sum`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from transformer_core.attention import MultiHeadAttention
from transformer_core.capture import AttentionCapture
from transformer_core.errors import ConfigError, InputError
from transformer_core.interp.attribution import head_results
from transformer_core.interp.trace import GPTTrace, Seq2SeqTrace, trace_gpt, trace_seq2seq
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.layers import RMSNorm
from transformer_core.models import GPT, Seq2Seq
from transformer_core.positional import apply_rope

BIAS, EMBED, POSITION = "bias", "embed", "pos"
SUM_TOLERANCE = 1e-4


@dataclass(frozen=True)
class Stream:
    """A residual stream (T, d_model) as its named parts (P, T, d_model), batch row 0."""

    names: list[str]
    parts: torch.Tensor

    def plus(self, other: Stream) -> Stream:
        return Stream([*self.names, *other.names], torch.cat([self.parts, other.parts]))


@dataclass(frozen=True)
class ScoreParts:
    """One query row of one head, its scores split by part.

    contributions (Tk, Pq, Pk): scale * q_a . k_b for query part a and key part b at each key;
    position (Tk,): the scheme's bias; scores (Tk,): the captured pre-softmax scores (the sum
    of both, within SUM_TOLERANCE); weights (Tk,): the head's attention after the mask."""

    kind: str
    layer: int
    head: int
    query: int
    query_parts: list[str]
    key_parts: list[str]
    contributions: np.ndarray
    position: np.ndarray
    scores: np.ndarray
    weights: np.ndarray

    @property
    def gap(self) -> float:
        """The largest |sum of the parts - captured score| over the row's keys."""
        return float(np.abs(self.contributions.sum((1, 2)) + self.position - self.scores).max())

    def cell_json(self, key: int) -> dict[str, Any]:
        """The `explain --json` object of one (query, key) cell."""
        return {
            "kind": self.kind,
            "layer": self.layer,
            "head": self.head,
            "query": self.query,
            "key": key,
            "score": round(float(self.scores[key]), 6),
            "parts": {"query": self.query_parts, "key": self.key_parts},
            "contributions": np.round(self.contributions[key].astype(np.float64), 6).tolist(),
            "position": round(float(self.position[key]), 6),
            "weight": round(float(self.weights[key]), 6),
            "gap": self.gap,
        }


def check_decomposable(model: nn.Module) -> None:
    """The split needs one norm between the stream and each attention: a pre-LN Transformer."""
    if not isinstance(model, GPT | Seq2Seq) or model.config.norm_position != "pre":
        raise ConfigError(
            "explain: the score split needs a pre-LN Transformer (a Post-LN block normalises the "
            "stream after each sum, so its parts no longer add up)"
        )


def _stack(model: GPT | Seq2Seq, kind: str) -> tuple[nn.ModuleList, Any]:
    """The blocks and the position scheme of the stack that attention `kind` lives in."""
    if isinstance(model, GPT):
        return model.blocks, model.positions
    if kind == "encoder_self":
        return model.encoder, model.src_positions
    return model.decoder, model.tgt_positions


def _heads_of(capture: AttentionCapture, attn: MultiHeadAttention, name: str, label: str) -> Stream:
    """One attention layer's output as parts: each head's z_h W_O^h, and b_O as 'bias'."""
    z = capture[name].z[:1]  # (1, H, T, d_head)
    results = head_results(z, attn.out_proj.weight)[0]  # (H, T, d_model)
    names = [f"{label}H{h}" for h in range(results.size(0))]
    bias = attn.out_proj.bias
    bias_part = torch.zeros_like(results[:1]) if bias is None else bias.expand_as(results[:1])
    return Stream([*names, BIAS], torch.cat([results, bias_part]))


def stream_parts(
    model: GPT | Seq2Seq, capture: AttentionCapture, stack: str, layers: int, *, with_self: bool = False
) -> Stream:
    """The residual stream entering block `layers` of `stack` ("self", "encoder_self",
    "decoder_self") as parts; with_self: also that block's self-attention output (what its
    cross-attention's queries read). A decoder's earlier blocks give self- and cross-heads."""
    blocks, scheme = _stack(model, stack)
    x0 = capture.residuals[f"{stack}.0.resid_pre"][0]  # (T, d_model)
    codes = scheme.codes(torch.arange(x0.size(0), device=x0.device))
    if codes is None:  # a relative scheme (or none) adds nothing to the stream
        stream = Stream([EMBED], x0[None])
    else:
        stream = Stream([EMBED, POSITION], torch.stack([x0 - codes.to(x0.dtype), codes.to(x0.dtype)]))
    sublayers = [("self_attn", stack, "")]
    if stack == "decoder_self":  # a decoder block also writes what its cross-attention read
        sublayers.append(("cross_attn", "cross", "x"))
    for layer in range(layers):
        block = blocks[layer]
        written = Stream([], x0.new_zeros(0, *x0.shape))
        for attr, kind, tag in sublayers:
            written = written.plus(
                _heads_of(capture, getattr(block, attr), f"{kind}.{layer}", f"L{layer}{tag}")
            )
        before = capture.residuals[f"{stack}.{layer}.resid_pre"][0]
        after = capture.residuals[f"{stack}.{layer}.resid_post"][0]
        stream = stream.plus(written)
        if model.config.mlp:  # the FFN's output: all the block added but attention
            stream = stream.plus(Stream([f"MLP{layer}"], (after - before - written.parts.sum(0))[None]))
    if with_self:
        stream = stream.plus(_heads_of(capture, blocks[layers].self_attn, f"{stack}.{layers}", f"L{layers}"))
    return _merge_bias(stream)


def _merge_bias(stream: Stream) -> Stream:
    """Every 'bias' part summed into one, placed last."""
    keep = [i for i, n in enumerate(stream.names) if n != BIAS]
    bias = stream.parts[[i for i, n in enumerate(stream.names) if n == BIAS]].sum(0, keepdim=True)
    return Stream([*(stream.names[i] for i in keep), BIAS], torch.cat([stream.parts[keep], bias]))


def named(prefix: str, stream: Stream) -> Stream:
    """The stream with its parts' names prefixed (which stack wrote them)."""
    return Stream([prefix + n for n in stream.names], stream.parts)


def normed_parts(stream: Stream, norm: nn.Module) -> torch.Tensor:
    """Parts (P, T, d) as the norm sees them with its scale frozen at the full stream's:
    LayerNorm centres each part and adds its shift to 'bias'; RMSNorm only divides."""
    full = stream.parts.sum(0)  # (T, d_model)
    parts = stream.parts
    if isinstance(norm, RMSNorm):
        scale = (full.pow(2).mean(-1, keepdim=True) + norm.eps).sqrt()
    else:
        scale = (full.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()
        parts = parts - parts.mean(-1, keepdim=True)
    out = parts / scale * norm.weight
    if getattr(norm, "bias", None) is not None:
        out[-1] += norm.bias  # the 'bias' part, always last
    return out


def project(parts: torch.Tensor, attn: MultiHeadAttention, which: int, head: int) -> torch.Tensor:
    """Normed parts (P, T, d_model) -> (P, T, d_head) through W_Q (which 0) or W_K (1) of one
    head, its bias added to the 'bias' part."""
    d, d_head = attn.d_model, attn.d_head
    rows = slice(which * d + head * d_head, which * d + (head + 1) * d_head)
    out = parts @ attn.in_proj.weight[rows].T
    if attn.in_proj.bias is not None:
        out[-1] += attn.in_proj.bias[rows]  # the 'bias' part, always last
    return out


@torch.no_grad()
def decompose_scores(
    model: GPT | Seq2Seq, capture: AttentionCapture, kind: str, layer: int, head: int, query: int
) -> ScoreParts:
    """The score split of head `head` of attention `kind` in block `layer`, for one query row
    of the captured forward pass (capture from `forward(..., capture=...)`, batch row 0)."""
    check_decomposable(model)
    record = capture[f"{kind}.{layer}"]
    stack = "decoder_self" if kind == "cross" else kind
    blocks, scheme = _stack(model, stack)
    block = blocks[layer]
    if kind == "cross":  # decoder parts ask, encoder parts answer: named apart ("dec L0H1", "enc L0H1")
        attn = block.cross_attn
        q_stream = named("dec ", stream_parts(model, capture, "decoder_self", layer, with_self=True))
        k_stream = named("enc ", stream_parts(model, capture, "encoder_self", model.config.n_layers))
        q_in = normed_parts(q_stream, block.norm_cross)
        k_in = normed_parts(k_stream, model.encoder_norm)
    else:
        attn = block.self_attn
        q_stream = k_stream = stream_parts(model, capture, stack, layer)
        q_in = k_in = normed_parts(q_stream, block.norm_self)
    q = project(q_in, attn, 0, head)  # (Pq, Tq, d_head)
    k = project(k_in, attn, 1, head)  # (Pk, Tk, d_head)
    rotation = None if kind == "cross" else scheme.rotation(torch.arange(q.size(1), device=q.device))
    if rotation is not None:  # RoPE turns every part by its position's angle: still linear
        q, k = apply_rope(q, *rotation), apply_rope(k, *rotation)
    contributions = torch.einsum("ad,bkd->kab", q[:, query], k) * record.scale  # (Tk, Pq, Pk)
    bias = record.position_bias
    position = torch.zeros(k.size(1)) if bias is None else bias[..., head, query, :].reshape(-1)
    return ScoreParts(
        kind,
        layer,
        head,
        query,
        q_stream.names,
        k_stream.names,
        contributions.float().cpu().numpy(),
        position.float().cpu().numpy(),
        record.scores[0, head, query].float().cpu().numpy(),
        record.weights[0, head, query].float().cpu().numpy(),
    )


@dataclass(frozen=True)
class Explained:
    """One head's score split on a text: the row's parts and the two token axes."""

    parts: ScoreParts
    queries: list[str]
    keys: list[str]


def explain(ckpt: Checkpoint, text: str, kind: str, layer: int, head: int, query: int) -> Explained:
    """Trace text (a GPT reads it; a reversal model decodes it greedily and is traced on its
    output) and split one query row of head (kind, layer, head). InputError/ConfigError name a
    bad text, head or query."""
    model, cfg = ckpt.model, ckpt.config
    check_decomposable(model)
    if not (0 <= layer < cfg.n_layers and 0 <= head < cfg.n_heads):
        raise ConfigError(f"head: {layer}.{head} is outside {cfg.n_layers} layers x {cfg.n_heads} heads")
    if isinstance(model, GPT):
        trace: GPTTrace | Seq2SeqTrace = trace_gpt(model, ckpt.tokenizer, text)
    else:
        trace = trace_seq2seq(model, ckpt.tokenizer, text)
    if kind not in trace.attention:
        raise ConfigError(f"head: this model has no {kind!r} attention; it has {sorted(trace.attention)}")
    queries, keys = trace.axes(kind)
    if not 0 <= query < len(queries):
        raise InputError(
            f"query: {query} is outside the {len(queries)} query positions (0-{len(queries) - 1})"
        )
    return Explained(decompose_scores(model, trace.capture, kind, layer, head, query), queries, keys)
