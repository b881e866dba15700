"""What /compare draws of one side: the input's trace through that side's model and switches,
and the maps of every attention kind its architecture has."""

from __future__ import annotations

from dataclasses import dataclass

from attention_lab.models.explorer_compute import gpt_view, reversal_view
from attention_lab.viewmodel.attention import AttentionMaps, Trace, attention_maps
from transformer_core import InferenceOptions
from transformer_core.io import Checkpoint

KINDS = {"gpt": ("self",), "seq2seq": ("cross", "encoder_self", "decoder_self")}


@dataclass(frozen=True)
class CompareRequest:
    """One side of the comparison (the view's cache key)."""

    text: str
    options: InferenceOptions
    cell_px: int


@dataclass(frozen=True)
class CompareSide:
    trace: Trace
    maps: dict[str, AttentionMaps]  # kind -> its grid and large head


def explorer_trace(ckpt: Checkpoint, text: str, options: InferenceOptions) -> Trace:
    """The trace the explorer page of the checkpoint's architecture shows."""
    if ckpt.config.arch == "gpt":
        return gpt_view(ckpt, text, options).trace
    return reversal_view(ckpt, text, options)


def compare_side(ckpt: Checkpoint, request: CompareRequest) -> CompareSide:
    trace = explorer_trace(ckpt, request.text, request.options)
    cfg = ckpt.config
    plain = [[f"L{l} H{h}" for h in range(cfg.n_heads)] for l in range(cfg.n_layers)]
    maps = {
        kind: attention_maps(
            trace,
            kind,
            request.options,
            cell_titles=plain,
            cell_px=request.cell_px,
        )
        for kind in KINDS[cfg.arch]
    }
    return CompareSide(trace, maps)
