"""Heads across a dataset: each head's detector scores over many held-out windows (a
distribution: median and quartiles, not one probe's number) and its top-activating query/key
pairs in context.

Why: a head's behaviour on the full distribution rarely matches what one narrow probe
suggests (HeadVis, 2026). Computed once per checkpoint and kept beside it (`PROFILES_FILE`,
keyed by the weights' checksum), so a page reads it instead of running the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from transformer_core.errors import ConfigError
from transformer_core.interp.heads import SCORES, probe_patterns, score_patterns
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.io.held_out import held_out_data, imported_windows
from transformer_core.models import GPT

PROFILES_FILE = "profiles.json"
PROFILE_WINDOWS, PROFILE_CHARS, TOP_PAIRS = 64, 64, 20


@dataclass(frozen=True)
class HeadProfiles:
    """Self-attention heads of a GPT over `windows` (token lists, shown as text).

    scores: score -> (W, L, H) per window (NaN where the template marks nothing in a window);
    top: (L, H, TOP_PAIRS, 4) rows of (window, query, key, weight), largest weight first, query
    0 left out (its one key always gets everything)."""

    checkpoint_sha: str
    data: str
    windows: list[list[str]]
    scores: dict[str, np.ndarray]
    top: np.ndarray

    def quartiles(self, score: str) -> np.ndarray:
        """(3, L, H): the 25th, 50th and 75th percentile of a score over the windows."""
        with np.errstate(invalid="ignore"):
            return np.nanpercentile(self.scores[score], [25, 50, 75], axis=0)

    def to_json(self) -> dict[str, Any]:
        return {
            "checkpoint_sha": self.checkpoint_sha,
            "data": self.data,
            "windows": self.windows,
            "scores": {k: _nulls(np.round(v, 4)) for k, v in self.scores.items()},
            "top": np.round(self.top, 4).tolist(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HeadProfiles:
        return cls(
            data["checkpoint_sha"],
            data["data"],
            data["windows"],
            {k: np.asarray(v, dtype=np.float64) for k, v in data["scores"].items()},
            np.asarray(data["top"], dtype=np.float64),
        )


def _nulls(values: np.ndarray) -> list:
    """Nested lists with NaN as None (JSON null: NaN is not JSON)."""
    as_objects = values.astype(object)
    as_objects[np.isnan(values)] = None
    return as_objects.tolist()


def profile_heads(
    ckpt: Checkpoint, windows: int = PROFILE_WINDOWS, length: int = PROFILE_CHARS
) -> HeadProfiles:
    """Every detector score of every head on each of `windows` held-out windows of its own
    data (the first `length` tokens of each), and each head's TOP_PAIRS largest weights.

    Bounded: at most `windows` x `length` tokens, one window's weights (L, H, T, T) in memory at
    a time. An imported model reads the default corpus (imported_windows)."""
    if not isinstance(ckpt.model, GPT):
        raise ConfigError("profiles: read a GPT's self-attention heads over its held-out text")
    held = held_out_data(ckpt, windows) or imported_windows(ckpt, windows, length)
    if held is None:
        raise ConfigError(
            "profiles: this checkpoint's training data is not on this machine (or it records none), "
            "so there is no held-out text to read its heads on"
        )
    sequences = [list(s[:length]) for s in held.sequences[:windows]]
    per_window, top = [], None
    with torch.inference_mode():
        for w, sequence in enumerate(sequences):
            (pattern,) = probe_patterns(ckpt.model, [sequence])
            per_window.append(score_patterns(pattern, SCORES)["self"])
            found = top_pairs(pattern.weights["self"][None])  # (L, H, TOP_PAIRS, 4), window 0
            found[..., 0] = w
            top = found if top is None else merge_top(top, found)
    scores = {name: np.stack([w[name] for w in per_window]) for name in SCORES}
    return HeadProfiles(
        checkpoint_sha=str(ckpt.meta.get("weights_sha256", "")),
        data=f"the first {length} tokens of {held.description}",
        windows=[ckpt.tokenizer.token_labels(s) for s in sequences],
        scores=scores,
        top=top,
    )


def top_pairs(weights: np.ndarray, top: int = TOP_PAIRS) -> np.ndarray:
    """weights (W, L, H, T, T) -> (L, H, top, 4): each head's largest weights over every window,
    as (window, query, key, weight), query 0 left out."""
    W, L, H, T, _ = weights.shape
    flat = weights.copy()
    flat[..., 0, :] = -1.0  # query 0 has one key: its weight 1 says nothing
    flat = flat.transpose(1, 2, 0, 3, 4).reshape(L, H, -1)  # (L, H, W*T*T)
    best = np.argsort(-flat, axis=-1, kind="stable")[..., :top]  # (L, H, top)
    window, rest = np.divmod(best, T * T)
    query, key = np.divmod(rest, T)
    value = np.take_along_axis(flat, best, axis=-1)
    return np.stack([window, query, key, value], axis=-1).astype(np.float64)


def merge_top(a: np.ndarray, b: np.ndarray, top: int = TOP_PAIRS) -> np.ndarray:
    """Two (L, H, k, 4) sets of (window, query, key, weight) rows -> the `top` largest weights of
    both, largest first (a's rows first among equal weights, as one pass over the windows gives)."""
    both = np.concatenate([a, b], axis=2)  # (L, H, 2k, 4)
    order = np.argsort(-both[..., 3], axis=-1, kind="stable")[..., :top]  # (L, H, top)
    return np.take_along_axis(both, order[..., None], axis=2)


def save_profiles(profiles: HeadProfiles, folder: Path) -> Path:
    path = Path(folder) / PROFILES_FILE
    path.write_text(json.dumps(profiles.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


def stored_profiles(ckpt: Checkpoint) -> HeadProfiles | None:
    """The profiles kept beside the checkpoint when they belong to these weights, else None."""
    if ckpt.folder is None or not (ckpt.folder / PROFILES_FILE).is_file():
        return None
    try:
        found = HeadProfiles.from_json(json.loads((ckpt.folder / PROFILES_FILE).read_text()))
    except (ValueError, KeyError, TypeError):
        return None  # a damaged file is computed again, never trusted
    return found if found.checkpoint_sha == ckpt.meta.get("weights_sha256") else None


def head_profiles(ckpt: Checkpoint) -> HeadProfiles:
    """The stored profiles of these weights, else computed now (PROFILE_WINDOWS windows: a bounded
    job of a few seconds on a CPU for the shipped models)."""
    return stored_profiles(ckpt) or profile_heads(ckpt)
