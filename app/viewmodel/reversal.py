"""What /reversal draws for one input: the model's answer, each cross-attention head's
anti-diagonal score and the lesson's head, and the maps of its three attention kinds."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from attention_lab.models.explorer_compute import reversal_sent, reversal_view
from attention_lab.viewmodel.attention import AttentionMaps, maps_of
from transformer_core import InferenceOptions
from transformer_core.beam import BeamResult, beam_search
from transformer_core.generation import sample_seq2seq
from transformer_core.interp import Seq2SeqTrace, anti_diagonal_scores
from transformer_core.io import Checkpoint, encode_source
from transformer_core.vocab import EOS_ID

KINDS = ("cross", "decoder_self", "encoder_self")  # the page's sections 1-3, in order


#: how the output is written: the page's "Decoding" choice (URL parameter `decoding`)
DECODINGS = {"greedy": "Greedy", "beam": "Beam search", "sample": "Sample"}


@dataclass(frozen=True)
class ReversalDecoding:
    """Greedy (the model's likeliest letter each step), beam search of `width`, or sampling at
    `temperature` with `seed`."""

    mode: str = "greedy"
    width: int = 4
    temperature: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class ReversalRequest:
    """An accepted input and how to draw it (the cache key of the page's view)."""

    text: str
    options: InferenceOptions
    decoding: ReversalDecoding = ReversalDecoding()  # noqa: RUF009 (frozen)
    weighted: bool = False  # the maps show each key's share of ||alpha v W_O|| instead of alpha


@dataclass(frozen=True)
class ReversalPage:
    """The trace of one input and everything /reversal draws from it."""

    trace: Seq2SeqTrace
    scores: np.ndarray  # (L, H) mean weight on the mirrored letter, per cross-attention head
    best: tuple[int, int]  # the most anti-diagonal head: the page opens on it
    maps: dict[str, AttentionMaps]  # kind -> its grid and large head
    beam: BeamResult | None = None  # the whole search, when the request asked for one

    @property
    def truth(self) -> str:
        return self.trace.text[::-1]


def reversal_page(ckpt: Checkpoint, request: ReversalRequest) -> ReversalPage:
    """The output (greedy, beam search or a sample), the teacher-forced capture over it and every
    map of it."""
    written, beam = decode(ckpt, request)
    trace = reversal_view(ckpt, request.text, request.options, written)
    cfg = ckpt.config
    kinds = tuple(k for k in KINDS if k in trace.attention)  # a GRU without attention has none
    if "cross" not in trace.attention:
        return ReversalPage(trace, np.zeros((0, 0)), (0, 0), {}, beam)
    scores = anti_diagonal_scores(trace.attention["cross"], len(request.text))
    best = tuple(int(i) for i in np.unravel_index(int(scores.argmax()), scores.shape))
    scored = [[f"L{l} H{h} · {scores[l, h]:.2f}" for h in range(cfg.n_heads)] for l in range(cfg.n_layers)]
    shown = trace
    if request.weighted:  # the scores above read the weights; the maps, what each key sends
        sent = reversal_sent(ckpt, request.text, request.options, written)
        shown = replace(trace, attention={**trace.attention, **sent})
    maps = maps_of(shown, kinds, request.options, {"cross": scored}, weighted=request.weighted)
    return ReversalPage(trace, scores, best, maps, beam)


def decode(ckpt: Checkpoint, request: ReversalRequest) -> tuple[tuple[int, ...] | None, BeamResult | None]:
    """The output ids the request's decoding writes, EOS left out (None: greedy, which the trace
    decodes itself), and the beam search when it ran; room for the input's length and 2."""
    how, budget = request.decoding, len(request.text) + 2
    if how.mode == "greedy":
        return None, None
    source = encode_source(ckpt.tokenizer, [request.text])[0].tolist()
    if how.mode == "beam":
        result = beam_search(ckpt.model, source, how.width, budget, options=request.options)
        return tuple(result.tokens), result
    steps = sample_seq2seq(
        ckpt.model, source, budget, temperature=how.temperature, seed=how.seed, options=request.options
    )
    return tuple(s.token for s in steps if s.token != EOS_ID), None
