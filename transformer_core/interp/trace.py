"""One call from text to every head's attention: what the app and the CLI show.

Results are plain dataclasses of numpy arrays in the [layer][head][query][key] layout,
plus the full `AttentionCapture` for step-by-step views.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions
from transformer_core.generation import greedy_decode
from transformer_core.io.data import encode_source
from transformer_core.io.tokenizer import EOS_ID, SOS_ID, CharTokenizer
from transformer_core.models import GPT, Seq2Seq


@dataclass
class GPTTrace:
    """Attention of a GPT on one text. attention["self"]: (L, H, T, T)."""

    text: str
    tokens: list[str]
    ids: list[int]
    unknown: list[tuple[int, str]]
    attention: dict[str, np.ndarray]
    next_token_probs: np.ndarray  # (V,) after the last token
    capture: AttentionCapture = field(repr=False)


@dataclass
class Seq2SeqTrace:
    """Greedy output and the attention of the teacher-forced pass over it.

    attention: encoder_self (L, H, Ts, Ts), decoder_self (L, H, Tt, Tt), cross (L, H, Tt, Ts)
    where the target tokens are SOS + output and the source tokens are text + EOS.
    """

    text: str
    output: str
    source_tokens: list[str]
    target_tokens: list[str]
    unknown: list[tuple[int, str]]
    attention: dict[str, np.ndarray]
    capture: AttentionCapture = field(repr=False)


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def trace_gpt(
    model: GPT, tokenizer: CharTokenizer, text: str, options: InferenceOptions = DEFAULT_OPTIONS
) -> GPTTrace:
    encoded = tokenizer.encode_checked(text, max_chars=model.config.max_len)
    ids = torch.tensor([encoded.ids], device=_device(model))
    capture = AttentionCapture()
    logits = model(ids, options=options, capture=capture)
    probs = torch.softmax(logits[0, -1].float(), dim=-1)
    return GPTTrace(
        text=text,
        tokens=tokenizer.token_labels(encoded.ids),
        ids=encoded.ids,
        unknown=encoded.unknown,
        attention={"self": capture.weights("self").float().cpu().numpy()},
        next_token_probs=probs.cpu().numpy(),
        capture=capture,
    )


@torch.no_grad()
def trace_seq2seq(
    model: Seq2Seq,
    tokenizer: CharTokenizer,
    text: str,
    options: InferenceOptions = DEFAULT_OPTIONS,
    max_new_tokens: int | None = None,
) -> Seq2SeqTrace:
    max_len = model.config.max_len
    encoded = tokenizer.encode_checked(text, max_chars=max_len - 1)  # room for EOS
    device = _device(model)
    src = encode_source(tokenizer, [text], device)
    budget = max_len - 1 if max_new_tokens is None else min(max_new_tokens, max_len - 1)
    output_ids = greedy_decode(model, src, budget, options=options)[0]
    target = [SOS_ID, *output_ids]
    capture = AttentionCapture()
    model(src, torch.tensor([target], device=device), options=options, capture=capture)
    return Seq2SeqTrace(
        text=text,
        output=tokenizer.decode(output_ids),
        source_tokens=tokenizer.token_labels([*encoded.ids, EOS_ID]),
        target_tokens=tokenizer.token_labels(target),
        unknown=encoded.unknown,
        attention={
            kind: capture.weights(kind).float().cpu().numpy()
            for kind in ("encoder_self", "decoder_self", "cross")
        },
        capture=capture,
    )
