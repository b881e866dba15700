"""Attention over what a model writes: a GPT's prompt plus its sample or beam search winner,
traced in one pass; a reversal model's beam search winner, traced like its greedy output.

A causal pass over prompt + sample gives every generated position the attention it had when
it was sampled (the KV cache changes nothing), as long as the two fit in the model's block
(max_len). When they do not, the last max_len characters are traced and the window says how
many were dropped: the first rows then see less context than the sampler did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from transformer_core.beam import DEFAULT_ALPHA, BeamResult, Hypothesis, beam_search
from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions
from transformer_core.errors import ConfigError
from transformer_core.generation import SampledToken, generate
from transformer_core.interp.trace import GPTTrace, Seq2SeqTrace, trace_gpt_ids, trace_seq2seq
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.io.data import encode_source
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.models import GPT
from transformer_core.stepping import SpecialTokens

#: the CLI's `trace --generate` samples as `generate` does by default: temperature 0.8, seeded
TRACE_TEMPERATURE = 0.8
GENERATE_HELP = (
    f"GPT: sample N characters after TEXT (temperature {TRACE_TEMPERATURE}, seeded by --seed) and trace "
    "TEXT + the sample (its last max_len characters when longer); the JSON adds generated (the sample) "
    "and generated_from (index of the first generated token). With --beam W: beam search of width W "
    "instead of sampling, and the JSON adds beam (the search tree, see `generate --help`)"
)
#: the `beam` object of `generate --beam W --json` and `trace ... --beam W --json`
BEAM_JSON_HELP = (
    'beam: {"width", "alpha", "length_penalty": "((5 + length) / 6) ** alpha", "best": H, "final": [H] '
    '(the hypotheses the winner was chosen from, best first), "steps": [{"step", "kept": [H], '
    '"finished": [H], "pruned": [H]}]}, H = {"tokens": [...], "text", '
    '"log_prob" (sum of the tokens\' log-probabilities), '
    '"score" (log_prob / length_penalty), "finished" (ended with EOS), "parent" (index of its prefix in the '
    "previous step's kept)}"
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


def hypothesis_json(h: Hypothesis, tokenizer: Tokenizer) -> dict[str, Any]:
    return {
        "tokens": [tokenizer.vocab[i] for i in h.tokens],
        "text": tokenizer.decode(list(h.tokens)),
        "log_prob": h.log_prob,
        "score": h.score,
        "finished": h.finished,
        "parent": h.parent,
    }


def beam_json(result: BeamResult, tokenizer: Tokenizer) -> dict[str, Any]:
    """The search as JSON (BEAM_JSON_HELP): every step's kept, finished and pruned hypotheses."""

    def many(hyps: tuple[Hypothesis, ...]) -> list[dict[str, Any]]:
        return [hypothesis_json(h, tokenizer) for h in hyps]

    return {
        "width": result.width,
        "alpha": result.alpha,
        "length_penalty": "((5 + length) / 6) ** alpha",
        "best": hypothesis_json(result.best, tokenizer),
        "final": many(result.final),
        "steps": [
            {"step": s.step, "kept": many(s.kept), "finished": many(s.finished), "pruned": many(s.pruned)}
            for s in result.steps
        ],
    }


def trace_beam(
    model: GPT,
    tokenizer: Tokenizer,
    prompt: str,
    n_new: int,
    width: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    options: InferenceOptions = DEFAULT_OPTIONS,
) -> tuple[GPTTrace, GeneratedWindow, BeamResult]:
    """Beam search n_new tokens after `prompt` and trace the prompt with the winner, as
    trace_generated does with a sample."""
    encoded = tokenizer.encode_checked(prompt, max_chars=10_000)
    special = SpecialTokens(tokenizer.stop_id, tuple(tokenizer.never_sampled))
    result = beam_search(model, encoded.ids, width, n_new, alpha=alpha, special=special, options=options)
    ids, window = token_window(tokenizer, prompt, encoded.ids, list(result.best.tokens), model.config.max_len)
    unknown = [(i - window.dropped, c) for i, c in encoded.unknown if i >= window.dropped]
    return trace_gpt_ids(model, tokenizer, ids, window.text, unknown, options), window, result


def trace_seq2seq_beam(
    ckpt: Checkpoint, text: str, width: int, options: InferenceOptions = DEFAULT_OPTIONS
) -> tuple[Seq2SeqTrace, dict[str, Any], str]:
    """`trace REVERSAL TEXT --beam W`: the beam search's winner traced like a greedy output,
    the JSON field it adds (beam) and a line saying what was traced."""
    model, tokenizer = ckpt.model, ckpt.tokenizer
    assert not isinstance(model, GPT)
    tokenizer.encode_checked(text, max_chars=model.config.max_len - 1)  # a clear message first
    source = encode_source(tokenizer, [text])[0].tolist()
    result = beam_search(model, source, width, model.config.max_len - 1, options=options)
    tr = trace_seq2seq(model, tokenizer, text, options, output_ids=result.tokens)
    line = f"{ckpt.name}: {text!r} -> {tr.output!r} (beam width {width}, score {result.best.score:.4f})"
    return tr, {"beam": beam_json(result, tokenizer)}, line


def trace_with_sample(
    ckpt: Checkpoint,
    text: str,
    n_new: int,
    seed: int,
    options: InferenceOptions = DEFAULT_OPTIONS,
    beam: int | None = None,
) -> tuple[GPTTrace, dict[str, Any], str]:
    """`trace CKPT TEXT --generate N --seed S [--beam W]`: the trace of text + sample (or beam
    search winner), the JSON fields it adds, and a line saying what was traced. A reversal
    model is refused: `trace` already traces the output it writes."""
    if not isinstance(ckpt.model, GPT):
        raise ConfigError(
            f"trace --generate: {ckpt.name} is a reversal model; it writes its own output, which "
            "`trace` already traces (with --beam W: its beam search winner). Leave out --generate."
        )
    if n_new < 1:
        raise ConfigError(f"trace --generate: {n_new} is not a number of characters to sample (1 or more)")
    if beam is not None:
        tr, window, result = trace_beam(ckpt.model, ckpt.tokenizer, text, n_new, beam, options=options)
        line = f"{ckpt.name}: {text!r} + beam search {window.sample!r} (width {beam}, alpha {result.alpha})"
        fields = {**window.json_fields(), "beam": beam_json(result, ckpt.tokenizer)}
    else:
        tr, window, _ = trace_generated(ckpt.model, ckpt.tokenizer, text, n_new, seed=seed, options=options)
        how = f"seed {seed}, temperature {TRACE_TEMPERATURE}"
        line = f"{ckpt.name}: {text!r} + sampled {window.sample!r} ({how})"
        fields = window.json_fields()
    if window.dropped:
        line += f"\ntraced the last {len(window.text)} characters, the model's block size"
    return tr, fields, line
