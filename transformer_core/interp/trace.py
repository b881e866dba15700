"""One call from text to every head's attention: what the app and the CLI show.

Results are plain dataclasses of numpy arrays in the [layer][head][query][key] layout,
plus the full `AttentionCapture` for step-by-step views. `to_json` gives the one JSON
layout that `python -m transformer_core trace --json` prints and the app downloads:
{"checkpoint", "input", "output", "tokens": {"source": [...], "target": [...]},
 "attention": {"self": [L][H][Tq][Tk]} or {"encoder_self", "decoder_self", "cross"}
   (a `bahdanau` model: {"cross"} only, 1 layer x 1 head; a `gru` model: {}),
 "context": [d_model floats] (a `gru` model only: the one vector its decoder reads),
 "unknown_characters": [...] (only when some)}.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from transformer_core.attention import KVCache
from transformer_core.capture import AttentionCapture
from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions
from transformer_core.generation import greedy_decode
from transformer_core.io.data import encode_source
from transformer_core.io.tokenizer import CharTokenizer, Tokenizer
from transformer_core.models import GPT, EncoderDecoder
from transformer_core.vocab import EOS_ID, SOS_ID

#: attention kind -> (token axis of its queries, token axis of its keys), axes named as in
#: the trace's `token_axes`: "source" = the input text (+ <eos> for seq2seq), "target" = <sos> + output
TOKEN_AXES: dict[str, tuple[str, str]] = {
    "self": ("source", "source"),
    "encoder_self": ("source", "source"),
    "decoder_self": ("target", "target"),
    "cross": ("target", "source"),
}

#: the `trace --json` object, for the command's help
TRACE_JSON_HELP = (
    '--json prints {"checkpoint", "input", "output", "tokens": {"source": [...], "target": [...]} '
    '(GPT: source only), "attention": {"self": [L][H][Tq][Tk]} (GPT) or {"encoder_self", '
    '"decoder_self", "cross"} (reversal; a bahdanau model: "cross" only, 1 layer x 1 head; a gru '
    'model: {} and "context": [d_model floats], the one vector its decoder reads), '
    '"unknown_characters" (when some)}; --generate adds "generated" and "generated_from", --beam '
    'adds "beam" (the search tree, see `generate --help`)'
)
JSON_DECIMALS = 6  # weights in JSON: enough for 1e-6 agreement, a third of float64's text


def trace_json(
    checkpoint: str,
    text: str,
    output: str,
    token_axes: dict[str, list[str]],
    attention: dict[str, np.ndarray],
    unknown: list[tuple[int, str]],
) -> dict[str, Any]:
    """The trace JSON object (see the module docstring): plain lists, weights rounded."""
    payload: dict[str, Any] = {
        "checkpoint": checkpoint,
        "input": text,
        "output": output,
        "tokens": dict(token_axes),
        "attention": {
            kind: np.round(w.astype(np.float64), JSON_DECIMALS).tolist() for kind, w in attention.items()
        },
    }
    if unknown:
        payload["unknown_characters"] = sorted({c for _, c in unknown})
    return payload


class _TraceAxes:
    """What both traces share: the token labels along each attention kind's two axes."""

    token_axes: dict[str, list[str]]  # a property of each trace

    def axes(self, kind: str) -> tuple[list[str], list[str]]:
        """(query tokens, key tokens) of attention[kind]: its row and column labels."""
        q, k = TOKEN_AXES[kind]
        return self.token_axes[q], self.token_axes[k]


@dataclass
class GPTTrace(_TraceAxes):
    """Attention of a GPT on one text. attention["self"]: (L, H, T, T).

    output: the most likely next character after the text (decoded argmax of next_token_probs).
    """

    text: str
    tokens: list[str]
    ids: list[int]
    unknown: list[tuple[int, str]]
    attention: dict[str, np.ndarray]
    next_token_probs: np.ndarray  # (V,) after the last token
    output: str
    capture: AttentionCapture = field(repr=False)

    @property
    def token_axes(self) -> dict[str, list[str]]:
        return {"source": self.tokens}

    def to_json(self, checkpoint: str) -> dict[str, Any]:
        """The `trace --json` object of this trace (JSON-ready: lists and strings)."""
        return trace_json(checkpoint, self.text, self.output, self.token_axes, self.attention, self.unknown)


@dataclass
class Seq2SeqTrace(_TraceAxes):
    """Greedy (or given) output and the attention of the teacher-forced pass over it.

    attention: encoder_self (L, H, Ts, Ts), decoder_self (L, H, Tt, Tt), cross (L, H, Tt, Ts)
    where the target tokens are SOS + output and the source tokens are text + EOS; a recurrent
    model has only its additive cross-attention (1, 1, Tt, Ts) (`bahdanau`) or nothing to
    attend and one fixed context vector (d_model,) instead (`gru`).
    """

    text: str
    output: str
    source_tokens: list[str]
    target_tokens: list[str]
    unknown: list[tuple[int, str]]
    attention: dict[str, np.ndarray]
    capture: AttentionCapture = field(repr=False)
    context: np.ndarray | None = None

    @property
    def token_axes(self) -> dict[str, list[str]]:
        return {"source": self.source_tokens, "target": self.target_tokens}

    def to_json(self, checkpoint: str) -> dict[str, Any]:
        """The `trace --json` object of this trace (JSON-ready: lists and strings)."""
        payload = trace_json(
            checkpoint, self.text, self.output, self.token_axes, self.attention, self.unknown
        )
        if self.context is not None:
            payload["context"] = np.round(self.context.astype(np.float64), JSON_DECIMALS).tolist()
        return payload


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.inference_mode()
def trace_gpt(
    model: GPT, tokenizer: Tokenizer, text: str, options: InferenceOptions = DEFAULT_OPTIONS
) -> GPTTrace:
    encoded = tokenizer.encode_checked(text, max_chars=model.config.max_len)
    return trace_gpt_ids(model, tokenizer, encoded.ids, text, encoded.unknown, options)


@torch.inference_mode()
def trace_gpt_ids(
    model: GPT,
    tokenizer: Tokenizer,
    token_ids: list[int],
    text: str,
    unknown: list[tuple[int, str]],
    options: InferenceOptions = DEFAULT_OPTIONS,
    cache: KVCache | None = None,
) -> GPTTrace:
    """The trace of given token ids (text: what they show, unknown: its characters read as UNK):
    what was sampled is traced as sampled, never re-tokenized from its text. cache: an empty
    KVCache that keeps every layer's keys and values, so sampling can go on from this pass."""
    ids = torch.tensor([token_ids], device=_device(model))
    capture = AttentionCapture()
    logits = model(ids, options=options, capture=capture, cache=cache, last_only=True)  # (1, 1, V)
    probs = torch.softmax(logits[0, -1].float(), dim=-1)
    return GPTTrace(
        text=text,
        tokens=tokenizer.token_labels(token_ids),
        ids=list(token_ids),
        unknown=unknown,
        attention={"self": capture.weights("self").float().cpu().numpy()},
        next_token_probs=probs.cpu().numpy(),
        output=tokenizer.decode([int(probs.argmax())]),
        capture=capture,
    )


@torch.inference_mode()
def trace_seq2seq(
    model: EncoderDecoder,
    tokenizer: CharTokenizer,
    text: str,
    options: InferenceOptions = DEFAULT_OPTIONS,
    max_new_tokens: int | None = None,
    output_ids: list[int] | None = None,
) -> Seq2SeqTrace:
    """Decode text greedily (or take output_ids, e.g. a beam search's winner without EOS) and
    trace the teacher-forced pass over SOS + output."""
    max_len = model.config.max_len
    encoded = tokenizer.encode_checked(text, max_chars=max_len - 1)  # room for EOS
    device = _device(model)
    src = encode_source(tokenizer, [text], device)
    budget = max_len - 1 if max_new_tokens is None else min(max_new_tokens, max_len - 1)
    if output_ids is None:
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
        attention={kind: capture.weights(kind).float().cpu().numpy() for kind in capture.kinds()},
        capture=capture,
        context=None if capture.context is None else capture.context[0].float().cpu().numpy(),
    )
