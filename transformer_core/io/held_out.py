"""Held-out sequences of a GPT's own training data, read from what its checkpoint records.

Why: a head's importance depends on the text it is measured on. On random strings a
character model's loss is 5.7 nats against 1.2 on its own kind of text, and the heads it
needs there are not the ones it needs for its data; so the ablation sweep measures on
windows of the model's own corpus that training never saw (the last 10%, `split_ids`), or
on fresh rows of the induction task for a model trained on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from transformer_core.errors import InputError
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.io.data import (
    INDUCTION_SEGMENTS,
    INDUCTION_SEQ_LEN,
    default_corpus,
    induction_ids,
    load_corpus,
    split_ids,
)

HELD_OUT_SEED = 1234  # not the training generator's seed (0): rows training never drew
WINDOWS = 16
MIN_WINDOW = 8


@dataclass(frozen=True)
class HeldOut:
    """Token-id sequences (each one window: the inputs and, shifted by one, the targets) and
    what they are, in words for people."""

    sequences: tuple[tuple[int, ...], ...]
    description: str


def _corpus_path(ckpt: Checkpoint, recorded: str | None) -> Path | None:
    """The recorded corpus file: absolute, or relative to the checkpoint's folder (a /train
    run keeps its uploaded corpus beside its weights). None: the default corpus."""
    if recorded is None:
        return None
    path = Path(recorded)
    if not path.is_absolute() and ckpt.folder is not None:
        path = ckpt.folder / path
    return path


def corpus_windows(ckpt: Checkpoint, windows: int = WINDOWS, seed: int = HELD_OUT_SEED) -> HeldOut | None:
    """`windows` random windows of block_size + 1 characters from the held-out tail of the
    model's corpus; None when the corpus is not on this machine or its tail is too short."""
    args = ckpt.meta.get("train_args") or {}
    path = _corpus_path(ckpt, args.get("corpus"))
    try:
        text = load_corpus(path)
    except (InputError, OSError):
        return None
    ids = torch.tensor(ckpt.tokenizer.encode(text), dtype=torch.long)
    _, val = split_ids(ids)
    length = min(int(args.get("block_size") or ckpt.config.max_len), ckpt.config.max_len, len(val) - 1)
    rows = _windows(val, length, windows, seed)
    if rows is None:
        return None
    source = f"its corpus {path.name}" if path else "the default corpus (Python's documentation topics)"
    return HeldOut(
        rows,
        f"{windows} held-out windows of {length} characters from the last 10% of {source}, "
        "which training never saw",
    )


def _windows(ids: torch.Tensor, length: int, windows: int, seed: int) -> tuple[tuple[int, ...], ...] | None:
    """`windows` seeded random windows of length + 1 ids (inputs and, shifted, targets) from ids (N,);
    None when fewer than MIN_WINDOW fit."""
    length = min(length, len(ids) - 1)
    if length < MIN_WINDOW:
        return None
    generator = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, len(ids) - length, (windows,), generator=generator)
    return tuple(tuple(ids[s : s + length + 1].tolist()) for s in starts.tolist())


def imported_windows(
    ckpt: Checkpoint, windows: int = WINDOWS, length: int = 64, seed: int = HELD_OUT_SEED
) -> HeldOut | None:
    """An imported model's reading text: windows of `length` tokens from the last 10% of the default
    corpus, which the lab never trained it on (its makers' data is not here). None for a model
    the lab trained, or a vocabulary that writes too little of the corpus."""
    if not ckpt.meta.get("source") or ckpt.training_task is not None:
        return None
    text = default_corpus()
    known = ckpt.tokenizer.keep_known(text)  # a character vocabulary may lack some of it
    _, val = split_ids(torch.tensor(ckpt.tokenizer.encode(known), dtype=torch.long))
    rows = _windows(val, min(length, ckpt.config.max_len), windows, seed)
    if rows is None:
        return None
    left_out = " (the characters its vocabulary lacks left out)" if len(known) < len(text) else ""
    return HeldOut(
        rows,
        f"{windows} windows from the last 10% of the default corpus (Python's documentation topics)"
        f"{left_out}: text the lab never trained this imported model on, though its makers may have",
    )


def induction_rows_held_out(ckpt: Checkpoint, windows: int = WINDOWS, seed: int = HELD_OUT_SEED) -> HeldOut:
    """Fresh rows of the induction task (a random segment repeated), drawn with a seed the
    training run never used."""
    seq_len = min(INDUCTION_SEQ_LEN, ckpt.config.max_len)
    rows, _ = induction_ids(ckpt.tokenizer, windows, torch.Generator().manual_seed(seed), seq_len)
    low, high = INDUCTION_SEGMENTS
    return HeldOut(
        tuple(tuple(r) for r in rows.tolist()),
        f"{windows} fresh rows of its training task: a random segment of {low}-{high} letters "
        f"repeated to {seq_len} characters",
    )


def held_out_data(ckpt: Checkpoint, windows: int = WINDOWS) -> HeldOut | None:
    """`windows` sequences of a GPT's own kind of data that training never saw, by the task its
    checkpoint records; None for an encoder-decoder (its probe strings are its data) or when
    the record is missing or the corpus is not on this machine."""
    if ckpt.config.arch != "gpt":
        return None
    if ckpt.training_task == "induction":
        return induction_rows_held_out(ckpt, windows)
    if ckpt.training_task == "lm":
        return corpus_windows(ckpt, windows)
    return None
