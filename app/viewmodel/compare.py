"""What /compare draws of one side: the input's trace through that side's model and switches,
and the maps of every attention kind its architecture has."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from attention_lab.models.explorer_compute import gpt_view, reversal_sent, reversal_view
from attention_lab.viewmodel.attention import AttentionMaps, Trace, maps_of
from attention_lab.viewmodel.gpt import value_weighted_trace
from transformer_core import InferenceOptions
from transformer_core.interp import Seq2SeqTrace, anti_diagonal_scores
from transformer_core.interp.heads import previous_token_template, template_score
from transformer_core.io import Checkpoint

KINDS = {"gpt": ("self",), "seq2seq": ("cross", "encoder_self", "decoder_self")}


@dataclass(frozen=True)
class CompareRequest:
    """One side of the comparison (the view's cache key)."""

    text: str
    options: InferenceOptions
    weighted: bool = False  # the maps show each key's share of ||alpha v W_O|| instead of alpha


@dataclass(frozen=True)
class CompareSide:
    """One side's trace (value-weighted if asked: what its maps and difference show), its
    lesson scores (always of the weights) and maps."""

    trace: Trace
    maps: dict[str, AttentionMaps]  # kind -> its grid and large head
    scores: np.ndarray  # (L, H): the lesson's score per head, of the kind SCORED names
    best: tuple[int, int]  # the head with the highest score: the head /reversal opens on for a reversal


#: arch -> (kind, name) of the lesson's score: a reversal's cross-attention is anti-diagonal (as
#: on /reversal); a GPT's self-attention reads the token before (the previous-token template)
SCORED = {"seq2seq": ("cross", "anti-diagonal"), "gpt": ("self", "previous-token")}


def lesson_scores(trace: Trace, text: str) -> np.ndarray:
    """Per head (L, H), the score its grid's titles show: the share of weight on the mirrored
    letter (a reversal: /reversal's score), or on the token just before (a GPT)."""
    if isinstance(trace, Seq2SeqTrace):
        return anti_diagonal_scores(trace.attention["cross"], len(text))
    self_attention = trace.attention["self"]
    template = previous_token_template(self_attention.shape[-1])
    return template_score(self_attention, template).astype(np.float32)


def best_head(scores: np.ndarray) -> tuple[int, int]:
    """(layer, head) of the highest score (NaN counts as none)."""
    flat = np.nan_to_num(scores, nan=-1.0)
    return tuple(int(i) for i in np.unravel_index(int(flat.argmax()), flat.shape))  # type: ignore[return-value]


def compare_side(ckpt: Checkpoint, request: CompareRequest) -> CompareSide:
    """The side's trace of the input (as the explorer page of its architecture shows it), every
    head's lesson score (of the weights), and the maps of each kind (value-weighted if asked)."""
    text, options = request.text, request.options
    if ckpt.config.arch == "gpt":
        view = gpt_view(ckpt, text, options)  # one traced pass, its records kept for the shares
        trace: Trace = view.trace
        shown = value_weighted_trace(ckpt, view) if request.weighted else trace
    else:
        trace = reversal_view(ckpt, text, options)
        sent = reversal_sent(ckpt, text, options) if request.weighted else {}
        shown = replace(trace, attention={**trace.attention, **sent})
    scores = lesson_scores(trace, text)
    maps = maps_of(shown, KINDS[ckpt.config.arch], options, {}, weighted=request.weighted)
    return CompareSide(shown, maps, scores, best_head(scores))
