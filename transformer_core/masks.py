"""Boolean attention masks: True means the query may attend to the key.

All masks broadcast against scores of shape (B, H, Tq, Tk).
"""

from __future__ import annotations

import torch


def causal_mask(
    num_queries: int, num_keys: int | None = None, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """(Tq, Tk): query i sees keys up to its own position.

    With a KV cache the queries are the last Tq of Tk positions, so the diagonal shifts
    right by Tk - Tq.
    """
    num_keys = num_queries if num_keys is None else num_keys
    offset = num_keys - num_queries
    q = torch.arange(num_queries, device=device)[:, None] + offset
    k = torch.arange(num_keys, device=device)[None, :]
    return k <= q


def padding_mask(tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, 1, 1, Tk): keys that are real tokens (not PAD)."""
    return (tokens != pad_id)[:, None, None, :]


def sliding_window_mask(
    num_queries: int,
    num_keys: int | None = None,
    window: int = 1,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """(Tq, Tk): query i sees only keys with |i - j| < window (combine with causal)."""
    num_keys = num_queries if num_keys is None else num_keys
    offset = num_keys - num_queries
    q = torch.arange(num_queries, device=device)[:, None] + offset
    k = torch.arange(num_keys, device=device)[None, :]
    return (q - k).abs() < window


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of the masks that are given; None when none is."""
    result = None
    for m in masks:
        if m is not None:
            result = m if result is None else result & m
    return result
