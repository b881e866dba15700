"""A cached decoding step in numpy, a GPT's or an encoder-decoder's decoder: the blocks' maths
for one new token.

A small model's step is dozens of tiny operations, and on the CPU their call overhead, not
their arithmetic, is the time: numpy's per call is a fraction of torch's. `generate` takes
this step once the cache holds the prompt, `greedy_decode` the decoder's from SOS on; tests
hold both to the modules' cached forward.
The weights are read-only numpy views of the model's own tensors, so nothing is copied,
nothing outlives the `generate` call that made the step, and a shared model is never written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from transformer_core.attention import KVCache
from transformer_core.config import InferenceOptions, ModelConfig
from transformer_core.errors import InputError
from transformer_core.layers import ACTIVATIONS, DecoderBlock, EncoderBlock, RMSNorm
from transformer_core.models import GPT, Seq2Seq, TokenEmbedding
from transformer_core.positional import PositionScheme
from transformer_core.vocab import PAD_ID

BIAS_ROWS = 32  # queries whose position bias (ALiBi, T5) is computed at once


def _view(t: torch.Tensor) -> np.ndarray:
    """A read-only numpy view of a CPU tensor (no copy)."""
    a = t.detach().numpy()
    a.flags.writeable = False
    return a


def _optional_view(t: torch.Tensor | None) -> np.ndarray | None:
    """A read-only view of an optional parameter (a bias, an affine weight), or None."""
    return None if t is None else _view(t)


@dataclass(frozen=True)
class _Norm:
    """LayerNorm (centred) or RMSNorm over one vector (d_model,), with its optional gain and
    bias as the module holds them."""

    centred: bool
    weight: np.ndarray | None  # (d_model,)
    bias: np.ndarray | None  # (d_model,)
    eps: float

    @classmethod
    def of(cls, norm: torch.nn.Module) -> _Norm | None:
        """The norm module's maths, or None for nn.Identity (a post-norm GPT's final norm)."""
        if isinstance(norm, RMSNorm):
            return cls(False, _view(norm.weight), None, norm.eps)
        if isinstance(norm, torch.nn.LayerNorm):
            return cls(True, _optional_view(norm.weight), _optional_view(norm.bias), norm.eps)
        return None

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """x (d_model,) -> (d_model,): scaled to unit root mean square (after centring)."""
        n = x.shape[-1]
        if self.centred:
            x = x - x.sum() / n
        y = x / np.sqrt(np.dot(x, x) / n + self.eps)
        if self.weight is not None:
            y = y * self.weight
        return y if self.bias is None else y + self.bias


def _linear(w: np.ndarray, b: np.ndarray | None, x: np.ndarray) -> np.ndarray:
    """x W^T + b for one vector x (d_in,): W (d_out, d_in) as nn.Linear stores it."""
    y = w @ x
    return y if b is None else y + b


def _bias(linear: torch.nn.Linear) -> np.ndarray | None:
    """A linear layer's bias (d_out,) as a read-only view, or None where it has none."""
    return _optional_view(linear.bias)


@dataclass(frozen=True)
class _Block:
    """One block's weights as numpy views, and what each sublayer is."""

    pre_norm: bool
    norm_self: _Norm
    w_qkv: np.ndarray  # (3 d_model, d_model): W_Q, W_K, W_V stacked
    b_qkv: np.ndarray | None
    w_o: np.ndarray  # (d_model, d_model)
    b_o: np.ndarray | None
    norm_ffn: _Norm | None  # None: attention-only
    w1: np.ndarray | None  # (d_ff, d_model)
    b1: np.ndarray | None
    w2: np.ndarray | None  # (d_model, d_ff)
    b2: np.ndarray | None
    w3: np.ndarray | None  # (d_ff, d_model): SwiGLU's gated projection
    b3: np.ndarray | None
    activation: str
    ablated: tuple[int, ...]

    @classmethod
    def of(cls, block: EncoderBlock, ablated: list[int]) -> _Block:
        """Views of one block's weights; `ablated`: its heads whose outputs are zeroed."""
        attn, ffn = block.self_attn, block.ffn
        norm_self = _Norm.of(block.norm_self)
        assert norm_self is not None
        return cls(
            pre_norm=block.pre_norm,
            norm_self=norm_self,
            w_qkv=_view(attn.in_proj.weight),
            b_qkv=_bias(attn.in_proj),
            w_o=_view(attn.out_proj.weight),
            b_o=_bias(attn.out_proj),
            norm_ffn=None if block.norm_ffn is None else _Norm.of(block.norm_ffn),
            w1=None if ffn is None else _view(ffn.w1.weight),
            b1=None if ffn is None else _bias(ffn.w1),
            w2=None if ffn is None else _view(ffn.w2.weight),
            b2=None if ffn is None else _bias(ffn.w2),
            w3=None if ffn is None or ffn.w3 is None else _view(ffn.w3.weight),
            b3=None if ffn is None or ffn.w3 is None else _bias(ffn.w3),
            activation="relu" if ffn is None else ffn.activation,
            ablated=tuple(ablated),
        )

    def feed_forward(self, h: np.ndarray) -> np.ndarray:
        """The MLP on one vector; its activation is torch's own kernel, so GELU is exact."""
        assert self.w1 is not None and self.w2 is not None
        up = torch.from_numpy(_linear(self.w1, self.b1, h))
        if self.w3 is not None:
            up = F.silu(up) * torch.from_numpy(_linear(self.w3, self.b3, h))
        else:
            up = ACTIVATIONS[self.activation](up)
        return _linear(self.w2, self.b2, up.numpy())


class NumpyStep:
    """Feeds a GPT one token at a time after the keys and values a KVCache holds.

    step(token) -> logits (vocab_size,) of the next token, as `model(token, cache=cache)`
    would give them. Batch size 1, the CPU, float32, and the options that shape a cached
    step (positions, scaling, a sliding window, ablated heads); `supports` says which.
    """

    INPUT = "GPT input"  # what a bad token is named in its message

    @staticmethod
    def supports(model: torch.nn.Module, options: InferenceOptions) -> bool:
        """Whether this step computes what `model` would under `options`."""
        if type(model) is not GPT or model.training:  # BERT has no cache; dropout needs torch
            return False
        weight = model.lm_head.weight
        if weight.device.type != "cpu" or weight.dtype != torch.float32:
            return False
        return options.head_gates is None and options.head_patch is None

    def __init__(self, model: GPT, options: InferenceOptions, cache: KVCache) -> None:
        if cache.length == 0 or cache.length >= model.config.max_len or cache.layers[0].k.size(0) != 1:
            raise ValueError("NumpyStep: needs a cache of one row holding 1 to max_len - 1 positions")
        self._prepare(model.config, options, model.tok_emb, model.positions, model.blocks, "self")
        self.final_norm = _Norm.of(model.final_norm)
        self.unembedding = _view(model.lm_head.weight)  # (vocab_size, d_model)
        self.length = cache.length
        for i, layer in enumerate(cache.layers):
            self.keys[i, :, : self.length] = layer.k[0].numpy()  # (H, T, d_head)
            self.values[i, :, : self.length] = layer.v[0].numpy()

    def _prepare(
        self,
        config: ModelConfig,
        options: InferenceOptions,
        embedding: TokenEmbedding,
        scheme: PositionScheme,
        blocks: torch.nn.ModuleList,
        kind: str,
    ) -> None:
        """The stack's weights, every position's codes, angles or bias, an empty cache."""
        self.n_heads, self.d_head, self.max_len = config.n_heads, config.d_head, config.max_len
        self.vocab_size = config.vocab_size
        self.scale = 1.0 / math.sqrt(config.d_head) if options.scale_scores else 1.0
        self.window = options.sliding_window
        self.embedding = _view(embedding.weight)
        self.embedding_scale = embedding.scale
        self.blocks = [_Block.of(b, options.ablated_heads(kind, i)) for i, b in enumerate(blocks)]

        every = torch.arange(config.max_len)
        with torch.no_grad():  # every position's codes and angles, computed as a step would
            codes = scheme.codes(every) if options.positions else None
            rotation = scheme.rotation(every) if options.positions else None
        self.codes = None if codes is None else codes.numpy()  # (max_len, d_model)
        self.turn_cos, self.turn_sin = None, None  # (max_len, d_head): RoPE as x cos + swap(x) sin
        if rotation is not None:  # pair (even, odd) -> (even cos - odd sin, even sin + odd cos)
            cos, sin = rotation[0].numpy(), rotation[1].numpy()  # each (max_len, d_head/2)
            self.turn_cos = np.repeat(cos, 2, axis=-1)
            self.turn_sin = np.stack((-sin, sin), axis=-1).reshape(len(sin), -1)
        self.bias_scheme = scheme if options.positions and scheme.biases else None  # ALiBi, T5
        self.bias_block: tuple[int, np.ndarray] | None = None  # (first query, (H, BIAS_ROWS, keys))

        shape = (len(self.blocks), self.n_heads, config.max_len, self.d_head)
        self.keys = np.empty(shape, np.float32)  # (L, H, max_len, d_head)
        self.values = np.empty(shape, np.float32)
        self.length = 0

    def __call__(self, token: int) -> np.ndarray:
        """Logits (vocab_size,) after `token` at the next position; its key and value stay."""
        p = self.length
        if p >= self.max_len:
            raise ValueError(f"NumpyStep: the cache is full at {self.max_len} positions")
        if not 0 <= token < self.vocab_size:
            raise InputError(f"{self.INPUT}: token ids must lie in [0, {self.vocab_size})")
        x = self.embedding[token]
        if self.embedding_scale is not None:
            x = x * self.embedding_scale
        if self.codes is not None:
            x = x + self.codes[p]
        bias = self._bias_row(p)
        for i, block in enumerate(self.blocks):
            x = self._block(i, block, x, p, bias)
        self.length = p + 1
        if self.final_norm is not None:
            x = self.final_norm(x)
        return self.unembedding @ x  # (vocab_size, d_model) @ (d_model,)

    def _bias_row(self, p: int) -> np.ndarray | None:
        """(H, p + 1): the position bias of query p over keys 0..p, or None. Computed by the
        scheme itself BIAS_ROWS queries at a time, so a long context never costs (H, max_len, max_len)."""
        if self.bias_scheme is None:
            return None
        if self.bias_block is None or not 0 <= p - self.bias_block[0] < BIAS_ROWS:
            end = min(p + BIAS_ROWS, self.max_len)
            with torch.no_grad():
                rows = self.bias_scheme.bias(torch.arange(p, end), torch.arange(end))  # (H, end - p, end)
            self.bias_block = (p, rows.numpy())
        first, rows = self.bias_block
        return rows[:, p - first, : p + 1]

    def _block(self, i: int, block: _Block, x: np.ndarray, p: int, bias: np.ndarray | None) -> np.ndarray:
        """Pre-LN: x + f(norm(x)); post-LN: norm(x + f(x)); for attention, then the MLP."""
        if block.pre_norm:
            x = x + self._attend(i, block, block.norm_self(x), p, bias)
            return x if block.norm_ffn is None else x + block.feed_forward(block.norm_ffn(x))
        x = block.norm_self(x + self._attend(i, block, x, p, bias))
        return x if block.norm_ffn is None else block.norm_ffn(x + block.feed_forward(x))

    def _attend(self, i: int, block: _Block, h: np.ndarray, p: int, bias: np.ndarray | None) -> np.ndarray:
        """Self-attention of the new position p over positions 0..p (or the window's)."""
        H, d_head = self.n_heads, self.d_head
        qkv = _linear(block.w_qkv, block.b_qkv, h).reshape(3, H, d_head)  # (3, H, d_head)
        qk = qkv[:2]  # (2, H, d_head): q and the new k turn alike
        if self.turn_cos is not None and self.turn_sin is not None:
            swapped = qk.reshape(2, H, d_head // 2, 2)[..., ::-1].reshape(2, H, d_head)  # (odd, even) pairs
            qk = qk * self.turn_cos[p] + swapped * self.turn_sin[p]
        self.keys[i, :, p] = qk[1]
        self.values[i, :, p] = qkv[2]
        start = 0 if self.window is None else max(0, p - self.window + 1)
        keys, values = self.keys[i, :, start : p + 1], self.values[i, :, start : p + 1]  # (H, T, d_head)
        scores = np.matmul(keys, qk[0][:, :, None])[..., 0] * self.scale  # (H, T)
        if bias is not None:  # (H, p + 1) over every key, of which the window's
            scores = scores + bias[:, start:]
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        heads = np.matmul(weights[:, None, :], values)[:, 0]  # (H, 1, T) @ (H, T, d_head) -> (H, d_head)
        if block.ablated:
            heads[list(block.ablated)] = 0.0
        return _linear(block.w_o, block.b_o, heads.reshape(H * d_head))  # (H, d_head) -> (d_model,)


@dataclass(frozen=True)
class _Cross:
    """A decoder block's cross-attention: its norm, W_Q, W_O and the heads it ablates (the
    source's keys and values belong to the step: one source per step)."""

    norm: _Norm
    w_q: np.ndarray  # (d_model, d_model)
    b_q: np.ndarray | None
    w_o: np.ndarray  # (d_model, d_model)
    b_o: np.ndarray | None
    ablated: tuple[int, ...]

    @classmethod
    def of(cls, block: DecoderBlock, ablated: list[int]) -> _Cross:
        attn, norm = block.cross_attn, _Norm.of(block.norm_cross)
        assert norm is not None
        d, b = attn.d_model, attn.in_proj.bias
        w_q, b_q = _view(attn.in_proj.weight[:d]), None if b is None else _view(b[:d])
        return cls(norm, w_q, b_q, _view(attn.out_proj.weight), _bias(attn.out_proj), tuple(ablated))


class NumpyDecoderStep(NumpyStep):
    """Feeds an encoder-decoder's decoder one token at a time from the first (SOS), over one
    source's encoder memory: step(token) -> logits (vocab_size,) as `model.decode` with a cache
    gives them. Its causal self-attention needs no mask on a cached step, so a run without the
    causal mask (which lets earlier targets see later ones) stays with the modules.
    """

    INPUT = "target"

    @staticmethod
    def supports(model: torch.nn.Module, options: InferenceOptions) -> bool:
        """Whether this step computes what the decoder of `model` would under `options`."""
        if type(model) is not Seq2Seq or model.training:
            return False
        weight = model.lm_head.weight
        if weight.device.type != "cpu" or weight.dtype != torch.float32:
            return False
        return options.causal and options.head_gates is None and options.head_patch is None

    def __init__(
        self, model: Seq2Seq, options: InferenceOptions, memory: torch.Tensor, src: torch.Tensor
    ) -> None:
        """memory (Ts, d_model): one source encoded; src (Ts,) its ids, whose PAD keys are hidden
        (unless the options turn the padding mask off)."""
        config, positions = model.config, model.tgt_positions
        self._prepare(config, options, model.tgt_emb, positions, model.decoder, "decoder_self")
        self.final_norm = _Norm.of(model.decoder_norm)
        self.unembedding = _view(model.lm_head.weight)  # (vocab_size, d_model)
        self.cross = [_Cross.of(b, options.ablated_heads("cross", i)) for i, b in enumerate(model.decoder)]
        self.decoder, self.padding_mask = model.decoder, options.padding_mask
        self.restart(memory, src)

    def restart(self, memory: torch.Tensor, src: torch.Tensor) -> NumpyDecoderStep:
        """This step over another source, from the first token again; the weights and position
        tables stay (a batch's rows share them). memory (Ts, d_model), src (Ts,) as for __init__."""
        with torch.no_grad():  # each layer's keys and values of the memory, once: (H, Ts, d_head) each
            kv = [block.cross_attn._keys_values(memory[None]) for block in self.decoder]
        self.memory_keys = [k[0].numpy() for k, _ in kv]
        self.memory_values = [v[0].numpy() for _, v in kv]
        self.hidden = (src == PAD_ID).cpu().numpy() if self.padding_mask else None  # (Ts,)
        self.length = 0
        return self

    def _block(self, i: int, block: _Block, x: np.ndarray, p: int, bias: np.ndarray | None) -> np.ndarray:
        """Self-attention, cross-attention, then the MLP, each pre- or post-LN."""
        cross = self.cross[i]
        if block.pre_norm:
            x = x + self._attend(i, block, block.norm_self(x), p, bias)
            x = x + self._read_memory(i, cross, cross.norm(x))
            return x if block.norm_ffn is None else x + block.feed_forward(block.norm_ffn(x))
        x = block.norm_self(x + self._attend(i, block, x, p, bias))
        x = cross.norm(x + self._read_memory(i, cross, x))
        return x if block.norm_ffn is None else block.norm_ffn(x + block.feed_forward(x))

    def _read_memory(self, i: int, cross: _Cross, h: np.ndarray) -> np.ndarray:
        """Cross-attention of the new position over the source's keys (no positions in it)."""
        H, d_head = self.n_heads, self.d_head
        q = _linear(cross.w_q, cross.b_q, h).reshape(H, d_head)  # (d_model,) -> (H, d_head)
        scores = np.matmul(self.memory_keys[i], q[:, :, None])[..., 0] * self.scale  # (H, Ts)
        if self.hidden is not None:
            scores = np.where(self.hidden, np.float32(-np.inf), scores)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        heads = np.matmul(weights[:, None, :], self.memory_values[i])[:, 0]  # (H, 1, Ts) @ (H, Ts, d_head)
        if cross.ablated:
            heads[list(cross.ablated)] = 0.0
        return _linear(cross.w_o, cross.b_o, heads.reshape(H * d_head))  # (H, d_head) -> (d_model,)
