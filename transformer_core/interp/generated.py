"""Attention over what a GPT writes: the prompt plus its sample, traced in one pass.

A causal pass over prompt + sample gives every generated position the attention it had when
it was sampled (the KV cache changes nothing), as long as the two fit in the model's block
(max_len). When they do not, the last max_len characters are traced and the window says how
many were dropped: the first rows then see less context than the sampler did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions
from transformer_core.errors import ConfigError
from transformer_core.generation import SampledToken, generate
from transformer_core.interp.trace import GPTTrace, trace_gpt_ids
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.models import GPT

#: the CLI's `trace --generate` samples as `generate` does by default: temperature 0.8, seeded
TRACE_TEMPERATURE = 0.8
GENERATE_HELP = (
    f"GPT: sample N characters after TEXT (temperature {TRACE_TEMPERATURE}, seeded by --seed) and trace "
    "TEXT + the sample (its last max_len characters when longer); the JSON adds generated (the sample) "
    "and generated_from (index of the first generated token)"
)


@dataclass(frozen=True)
class GeneratedWindow:
    """The traced text: prompt + sample, or their last max_len characters.

    generated_from: index (in `text`) of the first generated character in view;
    first_sample: index (in the sample) of that character; dropped: characters cut from the front.
    """

    text: str
    prompt: str
    sample: str
    generated_from: int
    first_sample: int
    dropped: int

    def json_fields(self) -> dict[str, Any]:
        """What a trace JSON adds for the generated positions (tokens[generated_from:] were written)."""
        fields: dict[str, Any] = {"generated": self.sample, "generated_from": self.generated_from}
        if self.dropped:
            fields["dropped_characters"] = self.dropped
        return fields


def generated_window(prompt: str, sample: str, max_len: int) -> GeneratedWindow:
    """prompt + sample, trimmed from the front to at most max_len characters."""
    full = prompt + sample
    dropped = max(0, len(full) - max_len)
    return _window(full[dropped:], prompt, sample, len(prompt), dropped)


def _window(text: str, prompt: str, sample: str, n_prompt: int, dropped: int) -> GeneratedWindow:
    """The window of `text` after `dropped` units (characters or tokens) of the prompt's n_prompt."""
    first_prompt, first_sample = max(0, n_prompt - dropped), max(0, dropped - n_prompt)
    return GeneratedWindow(text, prompt, sample, first_prompt, first_sample, dropped)


def token_window(
    tokenizer: Tokenizer, prompt: str, prompt_ids: list[int], sample_ids: list[int], max_len: int
) -> tuple[list[int], GeneratedWindow]:
    """prompt + sample as token ids, trimmed from the front to at most max_len tokens, and its
    window. Where every token is one character (character models) this is generated_window,
    the prompt's own characters kept; else (BPE) indices count tokens and the text shown is the
    window's tokens decoded."""
    sample = tokenizer.decode(sample_ids, skip_special=False)
    full = [*prompt_ids, *sample_ids]
    dropped = max(0, len(full) - max_len)
    if len(prompt) + len(sample) == len(full):
        return full[dropped:], generated_window(prompt, sample, max_len)
    text = tokenizer.decode(full[dropped:], skip_special=False)
    return full[dropped:], _window(text, prompt, sample, len(prompt_ids), dropped)


def trace_generated(
    model: GPT,
    tokenizer: Tokenizer,
    prompt: str,
    n_new: int,
    *,
    seed: int,
    temperature: float = TRACE_TEMPERATURE,
    options: InferenceOptions = DEFAULT_OPTIONS,
) -> tuple[GPTTrace, GeneratedWindow, list[SampledToken]]:
    """Sample n_new characters after `prompt` (seeded: same seed, same sample) and trace the
    prompt with its sample (see generated_window)."""
    encoded = tokenizer.encode_checked(prompt, max_chars=10_000)
    steps = generate(
        model,
        encoded.ids,
        n_new,
        temperature=temperature,
        seed=seed,
        options=options,
        never_sampled=tokenizer.never_sampled,
        stop_id=tokenizer.stop_id,
    )
    ids, window = token_window(tokenizer, prompt, encoded.ids, [s.token for s in steps], model.config.max_len)
    unknown = [(i - window.dropped, c) for i, c in encoded.unknown if i >= window.dropped]
    return trace_gpt_ids(model, tokenizer, ids, window.text, unknown, options), window, steps


def trace_with_sample(
    ckpt: Checkpoint, text: str, n_new: int, seed: int, options: InferenceOptions = DEFAULT_OPTIONS
) -> tuple[GPTTrace, dict[str, Any], str]:
    """`trace CKPT TEXT --generate N --seed S`: the trace of text + sample, the JSON fields the
    sample adds, and a line saying what was traced. A reversal model is refused: `trace`
    already traces the output it writes."""
    if not isinstance(ckpt.model, GPT):
        raise ConfigError(
            f"trace --generate: {ckpt.name} is a reversal model; it writes its own output, which "
            "`trace` already traces. Leave out --generate."
        )
    if n_new < 1:
        raise ConfigError(f"trace --generate: {n_new} is not a number of characters to sample (1 or more)")
    tr, window, _ = trace_generated(ckpt.model, ckpt.tokenizer, text, n_new, seed=seed, options=options)
    line = f"{ckpt.name}: {text!r} + sampled {window.sample!r} (seed {seed}, temperature {TRACE_TEMPERATURE})"
    if window.dropped:
        line += f"\ntraced the last {len(window.text)} characters, the model's block size"
    return tr, window.json_fields(), line
