"""The recurrent baselines the Transformer replaced, as model kinds of the same machinery.

`gru`: a GRU encoder-decoder whose decoder reads one fixed context vector, the encoder's final
state (Cho et al. 2014). `bahdanau`: the same with additive attention (Bahdanau et al. 2015):
every output step scores every encoder state, e_tj = v . tanh(W_s s_{t-1} + W_h h_j), and reads
their softmax-weighted sum. Both encoders are one unidirectional GRU layer, so the two models
differ by the attention only. `RecurrentSeq2Seq` is called like `Seq2Seq` (encode, decode,
forward(src, tgt), options, capture), so training, evaluation, tracing and decoding take either.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from transformer_core.attention import masked_softmax
from transformer_core.capture import AttentionCapture, AttentionRecord
from transformer_core.config import DEFAULT_OPTIONS, RECURRENT_KINDS, InferenceOptions, ModelConfig
from transformer_core.errors import ConfigError, InputError
from transformer_core.vocab import PAD_ID


def gru_step(
    x: torch.Tensor,
    h: torch.Tensor,
    weight_ih: torch.Tensor,
    weight_hh: torch.Tensor,
    bias_ih: torch.Tensor,
    bias_hh: torch.Tensor,
) -> torch.Tensor:
    """One GRU update: input x (B, I) and state h (B, H) -> new state (B, H).

    reset r = sigmoid(W_ir x + W_hr h), update z = sigmoid(W_iz x + W_hz h), candidate
    n = tanh(W_in x + r * (W_hn h)) (biases included), h' = (1 - z) * n + z * h: the gates
    decide how much of the old state survives, which is what lets gradients cross many steps.
    """
    i_r, i_z, i_n = F.linear(x, weight_ih, bias_ih).chunk(3, dim=-1)  # each (B, H)
    h_r, h_z, h_n = F.linear(h, weight_hh, bias_hh).chunk(3, dim=-1)
    reset = torch.sigmoid(i_r + h_r)
    update = torch.sigmoid(i_z + h_z)
    candidate = torch.tanh(i_n + reset * h_n)
    return (1 - update) * candidate + update * h


def additive_scores(query_proj: torch.Tensor, key_proj: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Bahdanau's alignment scores e_ij = v . tanh(W_s s_i + W_h h_j), shape (B, Tq, Tk).

    query_proj = W_s s (B, Tq, d), key_proj = W_h h (B, Tk, d), v (d,): a one-layer MLP scores
    each (query, key) pair, where dot-product attention multiplies them."""
    hidden = torch.tanh(query_proj[:, :, None, :] + key_proj[:, None, :, :])  # (B, Tq, Tk, d)
    return hidden @ v  # (B, Tq, Tk)


class GRUCell(nn.Module):
    """`gru_step` with torch.nn.GRUCell's parameters (weight_ih (3H, I) holds W_r, W_z, W_n
    stacked; same for weight_hh), so weights load from and into one unchanged."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.weight_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(3 * hidden_size, hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(3 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(3 * hidden_size))
        bound = hidden_size**-0.5  # torch's GRU initialisation
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """x (B, I), h (B, H) -> (B, H)."""
        return gru_step(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)


class AdditiveAttention(nn.Module):
    """W_s, W_h and v of `additive_scores`; keys are projected once per source."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.query_proj = nn.Linear(d_model, d_model, bias=False)  # W_s
        self.key_proj = nn.Linear(d_model, d_model, bias=False)  # W_h
        self.v = nn.Parameter(torch.empty(d_model).uniform_(-(d_model**-0.5), d_model**-0.5))

    def forward(self, hidden: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """Decoder state s_{t-1} (B, d), projected keys W_h h (B, Ts, d) -> scores (B, Ts)."""
        return additive_scores(self.query_proj(hidden)[:, None], keys, self.v)[:, 0]


@dataclass(frozen=True)
class DecoderState:
    """What the decoder carries from one output step to the next, batch rows first.

    hidden s (B, d); memory: encoder states h (B, Ts, d); keys W_h h (B, Ts, d) (bahdanau) or
    None; mask (B, Ts), True = a real source token, or None (padding mask off); context: the
    fixed context vector (B, d) (gru) or None.
    """

    hidden: torch.Tensor
    memory: torch.Tensor
    keys: torch.Tensor | None
    mask: torch.Tensor | None
    context: torch.Tensor | None

    def select(self, rows: torch.Tensor) -> DecoderState:
        """The state of batch rows `rows` (R,), repeats allowed: beam search's survivors."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return DecoderState(**{k: None if v is None else v.index_select(0, rows) for k, v in fields.items()})


@dataclass(frozen=True)
class DecoderStep:
    """One output step: logits (B, V), the next state, and (bahdanau) the pre-softmax
    scores and attention weights over the source (B, Ts)."""

    logits: torch.Tensor
    state: DecoderState
    scores: torch.Tensor | None
    weights: torch.Tensor | None


def _check_ids(ids: torch.Tensor, vocab_size: int, what: str) -> None:
    if ids.dim() != 2 or ids.size(1) == 0:
        raise InputError(f"{what}: expected token ids of shape (batch, time>0), got {tuple(ids.shape)}")
    if ids.min() < 0 or ids.max() >= vocab_size:
        raise InputError(f"{what}: token ids must lie in [0, {vocab_size})")


def _no_heads(options: InferenceOptions, positions: object) -> None:
    if positions is not None:
        raise ConfigError("positions: a recurrent model has no positional scheme to randomize")
    if options.head_gates is not None or options.head_patch is not None:
        raise ConfigError(
            "head_gates / head_patch: a recurrent model has no attention heads to gate or patch"
        )


class RecurrentSeq2Seq(nn.Module):
    """GRU encoder-decoder, with (`bahdanau`) or without (`gru`) additive attention.

    The decoder starts from the encoder's final state s_0 = h_T; each step reads
    [y_{t-1}; c_t] into a GRU cell and predicts from [s_t; c_t], where c_t is the fixed h_T
    (gru) or the attention-weighted sum of all h_j (bahdanau). Options: padding_mask=False
    runs the encoder over the PADs too; ablating ("cross", 0, 0) zeroes the context; the
    causal mask, sliding window and positions have nothing to act on (a recurrence is causal
    and orders its tokens by itself).
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        if config.model not in RECURRENT_KINDS:
            raise ConfigError(f"model: RecurrentSeq2Seq needs one of {RECURRENT_KINDS}, got {config.model!r}")
        self.config = config
        d, vocab = config.d_model, config.vocab_size
        self.src_emb = nn.Embedding(vocab, d)
        self.tgt_emb = nn.Embedding(vocab, d)
        self.drop = nn.Dropout(config.dropout)
        self.encoder = nn.GRU(d, d, batch_first=True)
        self.attention = AdditiveAttention(d) if config.model == "bahdanau" else None
        self.decoder_cell = GRUCell(2 * d, d)  # input [y_{t-1}; c_t]
        self.lm_head = nn.Linear(2 * d, vocab)  # from [s_t; c_t]

    def encode(
        self,
        src: torch.Tensor,
        *,
        options: InferenceOptions = DEFAULT_OPTIONS,
        capture: AttentionCapture | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """src (B, Ts) ids, PAD-padded on the right -> encoder states h (B, Ts, d_model).

        With the padding mask (default) the sequences are packed: each row's recurrence stops
        at its last real token, and its PAD positions hold zeros."""
        _check_ids(src, self.config.vocab_size, "source")
        _no_heads(options, positions)
        x = self.drop(self.src_emb(src))  # (B, Ts, d)
        if not options.padding_mask:
            return self.encoder(x)[0]
        lengths = (src != PAD_ID).sum(1).clamp(min=1).cpu()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        states, _ = self.encoder(packed)
        return pad_packed_sequence(states, batch_first=True, total_length=src.size(1))[0]

    def start(
        self, memory: torch.Tensor, src: torch.Tensor, options: InferenceOptions = DEFAULT_OPTIONS
    ) -> DecoderState:
        """The state before the first output: s_0 = the encoder state at the last real token."""
        B, Ts, _ = memory.shape
        mask = (src != PAD_ID) if options.padding_mask else None  # (B, Ts)
        last = (
            mask.sum(1).clamp(min=1) - 1 if mask is not None else torch.full((B,), Ts - 1, dtype=torch.long)
        )
        final = memory[torch.arange(B, device=memory.device), last.to(memory.device)]  # (B, d)
        keys = None if self.attention is None else self.attention.key_proj(memory)  # (B, Ts, d)
        context = final if self.attention is None else None
        return DecoderState(final, memory, keys, mask, context)

    def step(
        self, token: torch.Tensor, state: DecoderState, options: InferenceOptions = DEFAULT_OPTIONS
    ) -> DecoderStep:
        """Feed y_{t-1} (B,) ids: attend (bahdanau), update the state, predict (B, V)."""
        y = self.drop(self.tgt_emb(token))  # (B, d)
        scores = weights = None
        if self.attention is not None and state.keys is not None:
            scores = self.attention(state.hidden, state.keys)  # (B, Ts)
            weights = masked_softmax(scores, state.mask)
            context = (weights[:, None] @ state.memory)[:, 0]  # (B, 1, Ts) @ (B, Ts, d) -> (B, d)
        else:
            assert state.context is not None
            context = state.context
        if options.ablated_heads("cross", 0):
            context = torch.zeros_like(context)
        hidden = self.decoder_cell(torch.cat((y, context), dim=-1), state.hidden)
        logits = self.lm_head(torch.cat((hidden, context), dim=-1))
        return DecoderStep(logits, dataclasses.replace(state, hidden=hidden), scores, weights)

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
        """tgt (B, Tt) ids starting with SOS, memory (B, Ts, d), src (B, Ts) for its padding
        -> logits (B, Tt, vocab_size), one step per target token."""
        _check_ids(tgt, self.config.vocab_size, "target")
        _no_heads(options, positions)
        state = first = self.start(memory, src, options)
        queries, steps = [], []
        for t in range(tgt.size(1)):
            queries.append(state.hidden)
            steps.append(self.step(tgt[:, t], state, options))
            state = steps[-1].state
        if capture is not None:
            self._record(capture, first, queries, steps)
        return torch.stack([s.logits for s in steps], dim=1)  # (B, Tt, V)

    def _record(
        self,
        capture: AttentionCapture,
        first: DecoderState,
        queries: list[torch.Tensor],
        steps: list[DecoderStep],
    ) -> None:
        """The additive attention as one cross-attention record (1 layer, 1 head); without
        attention, the one context vector instead."""
        if self.attention is None:
            assert first.context is not None
            capture.set_context(first.context)
            return
        q = torch.stack(queries, dim=1)[:, None]  # (B, 1, Tt, d): s_{t-1} per output step
        k = first.memory[:, None]  # (B, 1, Ts, d): h_j, also the values
        scores = torch.stack([s.scores for s in steps if s.scores is not None], dim=1)[
            :, None
        ]  # (B, 1, Tt, Ts)
        weights = torch.stack([s.weights for s in steps if s.weights is not None], dim=1)[:, None]
        mask = None if first.mask is None else first.mask[:, None, None, :]  # (B, 1, 1, Ts)
        q, k, scores, weights = (t.detach() for t in (q, k, scores, weights))
        capture.add(AttentionRecord("cross", 0, q, k, q, k, k, scores, mask, None, weights, 1.0))

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
        memory = self.encode(src, options=options, positions=src_positions)
        return self.decode(tgt, memory, src, options=options, capture=capture, positions=tgt_positions)

    def position_codes(self, num_positions: int) -> None:
        """None: the recurrence orders the tokens; nothing is added per position."""
        return None
