"""/bert's computations: a masked LM's guesses and attention on one text, a GPT's guesses at
the same blanks from the left, and each measured on held-out text.

Pure functions of (checkpoint, args), run through attention_lab.models.compute (run_cached):
cached by the weights' checksum, the device and the arguments. No Streamlit here.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from transformer_core import AttentionCapture
from transformer_core.interp.fill import Guess, MaskFill, fill_masks, left_guesses
from transformer_core.io import Checkpoint, load_corpus
from transformer_core.train.mlm import (
    Blanks,
    MaskedLanguageModelTask,
    chance_accuracy,
    fill_accuracy,
    held_out_blanks,
)


def mask_fill(ckpt: Checkpoint, text: str) -> MaskFill:
    """The masked LM's attention on text (MASK_CHAR where hidden) and its top 5 guesses at
    every hidden position, the capture dropped (the cache keeps numpy only)."""
    fill = fill_masks(ckpt.model, ckpt.tokenizer, text)
    return replace(fill, trace=replace(fill.trace, capture=AttentionCapture()))


def gpt_guesses(ckpt: Checkpoint, text: str, positions: tuple[int, ...]) -> list[Guess]:
    """A GPT's top 5 guesses at each position from the characters on its left."""
    return left_guesses(ckpt.model, ckpt.tokenizer, text, list(positions))


@cache
def held_out() -> tuple[MaskedLanguageModelTask, Blanks]:
    """The default corpus as a masked-LM task and its held-out blanks (fixed seed): the same
    for every model and user, built once per process."""
    task = MaskedLanguageModelTask.from_text(load_corpus())
    return task, held_out_blanks(task)


def held_out_accuracy(ckpt: Checkpoint) -> float:
    """The model's accuracy at the held-out blanks: a masked LM reads both sides, a GPT the left."""
    task, blanks = held_out()
    return fill_accuracy(task, ckpt.model, ckpt.tokenizer, blanks)


def held_out_chance() -> tuple[float, int]:
    """Always guessing the corpus's most common character at the same blanks: (accuracy, blanks)."""
    task, blanks = held_out()
    return chance_accuracy(task, blanks), sum(int((targets != -100).sum()) for _, targets in blanks)
