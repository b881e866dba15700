"""Filling hidden characters: what a bidirectional masked LM (`BERT`) guesses at each
[MASK], beside what a causal GPT guesses there from the characters on its left alone.

Why: chapter 002's contrast in one call. The encoder reads both sides of a blank; the
decoder, trained to continue text, can only read what came before it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions
from transformer_core.interp.trace import GPTTrace
from transformer_core.io.data import MASK_CHAR
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.models import BERT, GPT

MASK_MARK = "[MASK]"  # how people type a hidden character (chapter 002's token)


def mark_masks(text: str) -> str:
    """text with every [MASK] (in any case) written as MASK_CHAR: one hidden character each."""
    return re.sub(re.escape(MASK_MARK), MASK_CHAR, text, flags=re.IGNORECASE)


def show_masks(text: str) -> str:
    """mark_masks undone: MASK_CHAR written as [MASK] again, for people."""
    return text.replace(MASK_CHAR, MASK_MARK)


@dataclass(frozen=True)
class Guess:
    """A model's most likely characters at one position, as (character, probability), best first;
    empty where it has nothing to read (a GPT at position 0)."""

    position: int
    candidates: list[tuple[str, float]]

    @property
    def best(self) -> str | None:
        return self.candidates[0][0] if self.candidates else None


@dataclass(frozen=True)
class MaskFill:
    """A masked LM on one text: its attention (every position sees both sides) and its
    guess at each hidden position."""

    trace: GPTTrace
    guesses: list[Guess]

    @property
    def filled(self) -> str:
        """The text with each hidden character replaced by the model's best guess."""
        chars = list(self.trace.text)
        for g in self.guesses:
            chars[g.position] = g.best or MASK_CHAR
        return "".join(chars)


def _top(probs: torch.Tensor, tokenizer: Tokenizer, top_k: int) -> list[tuple[str, float]]:
    """probs (V,) -> the top_k (token text, probability), best first."""
    values, ids = probs.topk(min(top_k, probs.numel()))
    return [(tokenizer.vocab[int(i)], float(v)) for v, i in zip(values, ids, strict=True)]


@torch.inference_mode()
def fill_masks(
    model: BERT, tokenizer: Tokenizer, text: str, options: InferenceOptions = DEFAULT_OPTIONS, top_k: int = 5
) -> MaskFill:
    """text (MASK_CHAR where hidden; see mark_masks) -> the model's attention and its top_k
    guesses at every hidden position, all in one bidirectional pass."""
    encoded = tokenizer.encode_checked(text, max_chars=model.config.max_len)
    mask_id = tokenizer.token_id(MASK_CHAR)
    ids = torch.tensor([encoded.ids], device=model.lm_head.weight.device)  # (1, T)
    capture = AttentionCapture()
    probs = torch.softmax(model(ids, options=options, capture=capture)[0].float(), dim=-1)  # (T, V)
    hidden = [i for i, t in enumerate(encoded.ids) if t == mask_id]
    trace = GPTTrace(
        text=text,
        tokens=tokenizer.token_labels(encoded.ids),
        ids=encoded.ids,
        unknown=encoded.unknown,
        attention={"self": capture.weights("self").float().cpu().numpy()},
        next_token_probs=probs[-1].cpu().numpy(),
        output="",
        capture=capture,
    )
    fill = MaskFill(trace, [Guess(i, _top(probs[i], tokenizer, top_k)) for i in hidden])
    return replace(fill, trace=replace(trace, output=fill.filled))


@torch.inference_mode()
def left_guesses(
    model: GPT, tokenizer: Tokenizer, text: str, positions: list[int], top_k: int = 5
) -> list[Guess]:
    """What a causal GPT expects at each of `positions` of text from the characters before it
    (one pass: row i - 1 predicts position i). Earlier hidden characters are unknown to it."""
    ids = tokenizer.encode(text)[: model.config.max_len]
    logits = model(torch.tensor([ids], device=model.lm_head.weight.device))[0]  # (T, V)
    probs = torch.softmax(logits.float(), dim=-1)
    return [Guess(i, _top(probs[i - 1], tokenizer, top_k) if 0 < i <= len(ids) else []) for i in positions]


def future_share(attention: np.ndarray) -> np.ndarray:
    """attention (L, H, T, T) -> (L, H): the mean weight each query gives keys after it; 0 under
    a causal mask, what a bidirectional head spends reading ahead."""
    T = attention.shape[-1]
    ahead = np.triu(np.ones((T, T), dtype=bool), k=1)
    return (attention * ahead).sum(-1).mean(-1)
