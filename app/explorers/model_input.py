"""What a user typed, checked against a model's vocabulary and length, and the notes a page
shows about it: the input layer of the explorer pages (/gpt, /reversal, /compare)."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from attention_lab.frame import state
from attention_lab.frame.markdown_safe import md_code, md_text
from attention_lab.frame.state import visible
from transformer_core.errors import InputError
from transformer_core.io import Checkpoint, Tokenizer

_CHAR_NAMES = {" ": "space", "\n": "newline", "\t": "tab", "\r": "carriage return"}


def char_name(ch: str) -> str:
    """A readable name for one character that needs no special font (emoji become U+1F600)."""
    if ch in _CHAR_NAMES:
        return _CHAR_NAMES[ch]
    if ch.isprintable() and ord(ch) < 0x2000:
        return f"'{ch}'"
    return f"U+{ord(ch):04X}"


def token_unit(tokenizer: Tokenizer) -> str:
    """What one position is for people: "character" (our models, nanoGPT's character runs) or
    "token" (byte-level BPE: a piece of a word, e.g. ␣the)."""
    return "token" if tokenizer.kind == "bpe" else "character"


@dataclass(frozen=True)
class CheckedInput:
    """What a page does with the text a user typed.

    text: what the model gets (lowercased when asked); problem: why nothing can run
    (empty, too long), else None; unknown: distinct characters that become <unk>.
    """

    raw: str
    text: str
    problem: str | None
    lowered: bool
    unknown: list[str]


def check_input(raw: str, tokenizer: Tokenizer, max_chars: int, *, lowercase: bool = False) -> CheckedInput:
    """Check `raw` before any model runs: a problem stops the page with a message, not a
    traceback. max_chars bounds the positions: characters, or tokens for a BPE model."""
    text = raw.lower() if lowercase else raw
    lowered = text != raw
    unit = token_unit(tokenizer)
    if not raw:
        return CheckedInput(raw, text, "The input is empty: type at least one character.", lowered, [])
    if unit == "character" and len(raw) > max_chars:
        problem = f"The input has {len(raw)} characters; this model takes at most {max_chars}. Shorten it."
        return CheckedInput(raw, text, problem, lowered, [])
    try:  # a vocabulary without <unk> (nanoGPT's characters) refuses characters it lacks
        encoded = tokenizer.encode_checked(text)
    except InputError as e:
        return CheckedInput(raw, text, f"{str(e)[:1].upper()}{str(e)[1:]}.", lowered, [])
    if len(encoded.ids) > max_chars:
        problem = (
            f"The input is {len(encoded.ids)} {unit}s long; this model takes at most {max_chars}. Shorten it."
        )
        return CheckedInput(raw, text, problem, lowered, [])
    unknown = list(dict.fromkeys(c for _, c in encoded.unknown))
    return CheckedInput(raw, text, None, lowered, unknown)


def checkpoint_note(ckpt: Checkpoint) -> str:
    """One caption line naming what the loaded model is, so a lecturer can say what is on screen."""
    c = ckpt.config
    steps = ckpt.metrics.get("steps")
    shape = f"d_model {c.d_model} · {c.n_layers} layers × {c.n_heads} heads · d_k = {c.d_head}"
    trained = f" · trained for {steps} steps" if steps else ""
    return imported_note(ckpt) + f"positions **{c.positions}** · " + shape + trained


SOURCES = {"hf": "Hugging Face", "nanogpt": "nanoGPT", "transformer-lens": "TransformerLens"}
TOKENIZERS = {"bpe": "byte-level BPE", "chars": "characters", "char": "characters"}


def imported_note(ckpt: Checkpoint) -> str:
    """'imported from Hugging Face (gpt2) · byte-level BPE, 50,257 tokens · ' for an imported
    model (checkpoint.json's "source"); '' for ours."""
    source = ckpt.meta.get("source")
    if not isinstance(source, dict):
        return ""
    origin = SOURCES.get(str(source.get("from")), str(source.get("from")))
    kind = f" ({md_text(str(source['model_type']))})" if source.get("model_type") else ""
    vocab = f"{TOKENIZERS.get(ckpt.tokenizer.kind, ckpt.tokenizer.kind)}, {len(ckpt.tokenizer):,} tokens"
    return f"imported from **{origin}**{kind} · {vocab} · "


def trained_lengths(ckpt: Checkpoint) -> tuple[int, int] | None:
    """The shortest and longest input a reversal model saw in training, from its checkpoint's
    training arguments (a run from /train records its own); None where they are not recorded.
    Why read, not assumed: a run may be trained on other lengths than the shipped models."""
    if ckpt.config.arch != "seq2seq":
        return None
    args = ckpt.meta.get("train_args") or {}
    try:
        shortest, longest = int(args["min_len"]), int(args["max_len"])
    except (KeyError, TypeError, ValueError):
        return None
    return (shortest, longest) if 0 < shortest <= longest else None


def lengths_words(span: tuple[int, int]) -> str:
    """'3–10 letters' (or '5 letters' for a single length)."""
    shortest, longest = span
    return f"{shortest} letters" if shortest == longest else f"{shortest}–{longest} letters"


def trained_help(ckpt: Checkpoint | None) -> str | None:
    """The text field's help: the lengths the model was trained on, where recorded."""
    span = trained_lengths(ckpt) if ckpt is not None else None
    if span is None:
        return None
    return (
        f"This model was trained on words of {lengths_words(span)}; it may fail on longer or "
        "shorter ones (the length table on the Train page shows how often)."
    )


def outside_training(ckpt: Checkpoint, n: int) -> str | None:
    """A sentence for a reversal result whose input length the model never trained on, else None."""
    span = trained_lengths(ckpt)
    if span is None or span[0] <= n <= span[1]:
        return None
    return f"This model was trained on {lengths_words(span)}; this input has {n}."


def stop_on_problem(checked: CheckedInput) -> None:
    """Say why the input cannot run and stop the page (its widgets' state is kept)."""
    if checked.problem:
        (st.warning if not checked.raw else st.error)(checked.problem, icon=":material/error:")
        state.stop()


def show_input_notes(checked: CheckedInput, *, what: str = "model") -> None:
    """Info lines for lowercasing and for characters the vocabulary lacks."""
    if checked.lowered:
        st.info(
            f"The {what} only knows lowercase letters, so your input was lowercased to "
            f"{md_code(visible(checked.text))}.",
            icon=":material/text_fields:",
        )
    if checked.unknown:
        names = ", ".join(char_name(c) for c in checked.unknown)
        st.warning(f"Not in the vocabulary, replaced by `<unk>`: {names}.", icon=":material/help:")
