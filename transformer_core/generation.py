"""Decoding: sampling from a GPT (with a KV cache), greedy decoding of a batch of sources, and
greedy or sampled decoding of one source (every encoder-decoder kind). Beam search: `beam`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer_core.attention import KVCache
from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions
from transformer_core.models import GPT, EncoderDecoder
from transformer_core.numpy_step import NumpyDecoderStep, NumpyStep
from transformer_core.stepping import special_tokens, stepper_for
from transformer_core.vocab import EOS_ID, PAD_ID, SOS_ID, SPECIAL_TOKENS

N_SPECIAL = len(SPECIAL_TOKENS)
CHAR_SPECIALS = tuple(range(N_SPECIAL))  # PAD/SOS/EOS/UNK of the character models trained here


@dataclass(frozen=True)
class SampledToken:
    """One generated token, its probability and the most likely alternatives."""

    token: int
    prob: float
    top: list[tuple[int, float]]


def filter_logits(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """Next-token probabilities (..., V) after temperature, top-k and nucleus (top-p) filtering.

    temperature 0 means greedy: all mass on the arg-max.
    """
    if temperature <= 0:
        probs = torch.zeros_like(logits, dtype=torch.float32)
        return probs.scatter_(-1, logits.argmax(-1, keepdim=True), 1.0)
    logits = logits.float() / temperature
    if top_k is not None and 0 < top_k < logits.size(-1):
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and 0 < top_p < 1:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        sorted_probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the mass before it already reaches top_p (keeps at least one)
        drop = (sorted_probs.cumsum(-1) - sorted_probs) >= top_p
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return torch.softmax(logits, dim=-1)


def draw(probs: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    """A token from filtered probabilities (V,): sampled, or the arg-max at temperature 0."""
    if temperature > 0:
        return int(torch.multinomial(probs, 1, generator=generator))
    return int(probs.argmax())


def sampled_token(
    logits: torch.Tensor, probs: torch.Tensor, token: int, temperature: float, n_alternatives: int
) -> SampledToken:
    """The record of one written token: its probability at this temperature (before top-k/p)
    and the n most likely alternatives."""
    raw = torch.softmax(logits.float() / max(temperature, 1e-6), dim=-1) if temperature > 0 else probs
    top = torch.topk(raw, min(n_alternatives, raw.numel()))
    return SampledToken(
        token, float(raw[token]), list(zip(top.indices.tolist(), top.values.tolist(), strict=True))
    )


@torch.inference_mode()
def generate(
    model: GPT,
    prompt_ids: list[int],
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    use_cache: bool = True,
    n_alternatives: int = 5,
    options: InferenceOptions = DEFAULT_OPTIONS,
    never_sampled: Sequence[int] = CHAR_SPECIALS,
    stop_id: int | None = None,
    cache: KVCache | None = None,
) -> list[SampledToken]:
    """Sample max_new_tokens after the prompt. With a cache, each step feeds one token;
    once the context would pass max_len, the window slides and the cache is rebuilt.

    never_sampled: ids never written (default: our character models' PAD/SOS/EOS/UNK); an
    imported model passes its tokenizer's (`tokenizer.never_sampled`, often none). stop_id:
    sampling it ends generation (it is the last step returned), e.g. GPT-2's <|endoftext|>.
    cache: the keys and values of the prompt's first cache.length tokens, already computed
    (a traced pass of the prompt, see KVCache.keep): the first step feeds only the rest. It is
    read, not kept: on the CPU the numpy step takes a copy and goes on from there."""
    banned = torch.tensor(list(never_sampled), dtype=torch.long)
    device = next(model.parameters()).device
    generator = torch.Generator(device=device)
    if seed is not None:
        generator.manual_seed(seed)
    max_len = model.config.max_len
    ids = list(prompt_ids)
    out: list[SampledToken] = []
    if cache is not None and not (use_cache and 0 < cache.length < len(ids)):
        raise ValueError("generate: a given cache must hold some, not all, of the prompt's tokens")
    fed = 0 if cache is None else cache.length  # how many tokens of `ids` the cache already holds
    step: NumpyStep | None = None  # once the cache holds all but the newest token, on the CPU
    numpy_steps = NumpyStep.supports(model, options)
    for _ in range(max_new_tokens):
        if use_cache and cache is not None and len(ids) <= max_len:
            if step is None and numpy_steps and len(ids) - fed == 1:
                step = NumpyStep(model, options, cache)  # it keeps the keys and values from here on
            new = ids[fed:]
        else:
            new = ids[-max_len:]  # the window: every position again
            cache = model.new_cache() if use_cache and len(ids) <= max_len else None
            step = None
        if step is not None:
            logits = torch.from_numpy(step(new[0]))
        else:
            x = torch.tensor([new], device=device)
            logits = model(x, options=options, cache=cache, last_only=True)[0, -1].clone()
        logits[banned.to(logits.device)] = float("-inf")  # e.g. PAD/SOS/EOS/UNK: not text to write
        fed = len(ids)
        probs = filter_logits(logits, temperature, top_k, top_p)
        token = draw(probs, temperature, generator)
        out.append(sampled_token(logits, probs, token, temperature, n_alternatives))
        ids.append(token)
        if token == stop_id:
            break
    return out


NUMPY_ROWS = 4  # up to so many rows, numpy steps row by row cost less than the modules' batched passes


@torch.inference_mode()
def greedy_decode(
    model: EncoderDecoder,
    src: torch.Tensor,
    max_new_tokens: int,
    *,
    options: InferenceOptions = DEFAULT_OPTIONS,
) -> list[list[int]]:
    """Greedy outputs (without SOS/EOS) for a batch of sources src (B, Ts). A few rows (a page's)
    go one by one through a numpy decoder step where it computes what the modules would (the
    CPU, the causal mask on): a step per token, where each full pass of the modules is dozens of
    tiny operations. More rows (an evaluation's batches) share the modules' passes."""
    memory = model.encode(src, options=options)  # (B, Ts, d_model)
    if src.size(0) <= NUMPY_ROWS and NumpyDecoderStep.supports(model, options):
        step = NumpyDecoderStep(model, options, memory[0], src[0])  # type: ignore[arg-type]
        return [
            _greedy_row(step if b == 0 else step.restart(memory[b], src[b]), max_new_tokens)
            for b in range(src.size(0))
        ]
    return _greedy_modules(model, src, memory, max_new_tokens, options)


def _greedy_row(step: NumpyDecoderStep, max_new_tokens: int) -> list[int]:
    """One source's greedy output: from SOS, the likeliest token that is neither PAD nor SOS,
    until EOS (not kept) or max_new_tokens."""
    out, token = [], SOS_ID
    for _ in range(max_new_tokens):
        logits = step(token)  # (vocab_size,)
        logits[[PAD_ID, SOS_ID]] = -np.inf
        token = int(logits.argmax())
        if token == EOS_ID:
            break
        out.append(token)
    return out


def _greedy_modules(
    model: EncoderDecoder,
    src: torch.Tensor,
    memory: torch.Tensor,
    max_new_tokens: int,
    options: InferenceOptions,
) -> list[list[int]]:
    """greedy_decode through the modules: the whole target again at every step."""
    B = src.size(0)
    tgt = torch.full((B, 1), SOS_ID, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    for _ in range(max_new_tokens):
        logits = model.decode(tgt, memory, src, options=options)[:, -1]  # (B, V)
        logits[:, PAD_ID] = float("-inf")
        logits[:, SOS_ID] = float("-inf")
        nxt = logits.argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, PAD_ID), nxt)
        tgt = torch.cat((tgt, nxt[:, None]), dim=1)
        done |= nxt == EOS_ID
        if bool(done.all()):
            break
    outputs = []
    for row in tgt[:, 1:].tolist():
        seq = []
        for t in row:
            if t in (EOS_ID, PAD_ID):
                break
            seq.append(t)
        outputs.append(seq)
    return outputs


@torch.inference_mode()
def sample_seq2seq(
    model: EncoderDecoder,
    source_ids: list[int],
    max_new_tokens: int,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | None = None,
    n_alternatives: int = 5,
    options: InferenceOptions = DEFAULT_OPTIONS,
) -> list[SampledToken]:
    """Decode one source (its ids then EOS) token by token through the decoder's cache or
    state: the arg-max at temperature 0 (= greedy_decode), else sampled. The output ends
    with EOS (its last step) unless max_new_tokens runs out first; PAD and SOS are never written."""
    stepper = stepper_for(model, source_ids, max_new_tokens, options)
    special = special_tokens(model)
    logits = stepper.start()[0]  # (V,)
    generator = torch.Generator(device=logits.device)
    if seed is not None:
        generator.manual_seed(seed)
    banned = torch.tensor(special.banned, dtype=torch.long, device=logits.device)
    out: list[SampledToken] = []
    for _ in range(max_new_tokens):
        logits = logits.clone()
        logits[banned] = float("-inf")
        probs = filter_logits(logits, temperature, top_k, top_p)
        token = draw(probs, temperature, generator)
        out.append(sampled_token(logits, probs, token, temperature, n_alternatives))
        if token == special.eos_id:
            break
        logits = stepper.advance(torch.tensor([token], device=logits.device))[0]
    return out
