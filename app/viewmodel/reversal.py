"""What /reversal draws for one input: the model's answer, each cross-attention head's
anti-diagonal score and the lesson's head, and the maps of its three attention kinds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attention_lab.models.explorer_compute import reversal_view
from attention_lab.viewmodel.attention import AttentionMaps, maps_of
from transformer_core import InferenceOptions
from transformer_core.interp import Seq2SeqTrace, anti_diagonal_scores
from transformer_core.io import Checkpoint

KINDS = ("cross", "decoder_self", "encoder_self")  # the page's sections 1-3, in order


@dataclass(frozen=True)
class ReversalRequest:
    """An accepted input and how to draw it (the cache key of the page's view)."""

    text: str
    options: InferenceOptions


@dataclass(frozen=True)
class ReversalPage:
    """The trace of one input and everything /reversal draws from it."""

    trace: Seq2SeqTrace
    scores: np.ndarray  # (L, H) mean weight on the mirrored letter, per cross-attention head
    best: tuple[int, int]  # the most anti-diagonal head: the page opens on it
    maps: dict[str, AttentionMaps]  # kind -> its grid and large head

    @property
    def truth(self) -> str:
        return self.trace.text[::-1]


def reversal_page(ckpt: Checkpoint, request: ReversalRequest) -> ReversalPage:
    """One forward pass (greedy decode, then the teacher-forced capture) and every map of it."""
    trace = reversal_view(ckpt, request.text, request.options)
    cfg = ckpt.config
    scores = anti_diagonal_scores(trace.attention["cross"], len(request.text))
    best = tuple(int(i) for i in np.unravel_index(int(scores.argmax()), scores.shape))
    scored = [[f"L{l} H{h} · {scores[l, h]:.2f}" for h in range(cfg.n_heads)] for l in range(cfg.n_layers)]
    maps = maps_of(trace, KINDS, request.options, {"cross": scored})
    return ReversalPage(trace, scores, best, maps)
