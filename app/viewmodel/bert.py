"""What /bert draws for one text: the masked LM's guesses and every head's two-sided maps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attention_lab.models.bert_compute import mask_fill
from attention_lab.viewmodel.attention import AttentionMaps, attention_maps
from transformer_core import InferenceOptions
from transformer_core.interp.fill import MaskFill, future_share
from transformer_core.io import Checkpoint

BOTH_WAYS = "self-attention, both ways (no causal mask)"


@dataclass(frozen=True)
class BertView:
    """The masked LM on one text: its guesses, its maps, and each head's weight on later keys."""

    fill: MaskFill
    maps: AttentionMaps
    ahead: np.ndarray  # (L, H): future_share of every head

    @property
    def hidden(self) -> tuple[int, ...]:
        return tuple(g.position for g in self.fill.guesses)


def bert_page(ckpt: Checkpoint, text: str) -> BertView:
    """text: MASK_CHAR where a character is hidden (transformer_core.interp.fill.mark_masks)."""
    fill = mask_fill(ckpt, text)
    L, H = fill.trace.attention["self"].shape[:2]
    maps = attention_maps(
        fill.trace,
        "self",
        InferenceOptions(causal=False),
        cell_titles=[[f"L{l} H{h}" for h in range(H)] for l in range(L)],
        label=BOTH_WAYS,
    )
    return BertView(fill, maps, future_share(fill.trace.attention["self"]))
