"""`python -m transformer_core generate`: a GPT continues a prompt, a reversal model decodes its
input; sampled (temperature, top-k, top-p), greedy (temperature 0) or by beam search (--beam W)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from transformer_core.beam import DEFAULT_ALPHA, MAX_BEAM_WIDTH, beam_search, check_beam_width
from transformer_core.device import DEVICE_CHOICES, resolve_device
from transformer_core.generation import SampledToken, generate, sample_seq2seq
from transformer_core.interp.generated import BEAM_JSON_HELP, beam_json
from transformer_core.io import Checkpoint, encode_source, load_checkpoint
from transformer_core.models import GPT, require_next_token
from transformer_core.stepping import SpecialTokens

GPT_TEMPERATURE = 0.8
GPT_NEW_TOKENS, GPT_BEAM_NEW_TOKENS = 200, 64
GENERATE_DESCRIPTION = (
    "A GPT continues PROMPT; a reversal model decodes PROMPT as its input. Sampling: --temperature "
    f"(GPT default {GPT_TEMPERATURE}; reversal default 0 = greedy), --top-k, --top-p, --seed. --beam W: "
    f"beam search of width W (1-{MAX_BEAM_WIDTH}; 1 = greedy) with GNMT length penalty "
    "((5 + length) / 6) ** alpha (--length-penalty alpha). --json prints one object: "
    '{"checkpoint", "prompt", "text" (what was written), "decoding": "sample" | "greedy" | "beam", '
    '"unknown_characters", and "tokens": [{"token", "prob", "top": [[token, prob], ...]}] (sample, greedy) '
    "or " + BEAM_JSON_HELP + " (beam)"
)


def generate_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("checkpoint")
    sp.add_argument("prompt", help="GPT: the text to continue; reversal: the text to reverse")
    sp.add_argument(
        "--max-new-tokens",
        type=int,
        default=None,
        help=f"GPT: default {GPT_NEW_TOKENS} ({GPT_BEAM_NEW_TOKENS} with --beam: prompt and hypotheses "
        "share the model's block); reversal: up to EOS, at most max_len - 1",
    )
    sp.add_argument("--temperature", type=float, default=None, help="0 = greedy")
    sp.add_argument("--top-k", type=int, default=None)
    sp.add_argument("--top-p", type=float, default=None)
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--beam", default=None, metavar="W", help=f"beam search of width W, 1-{MAX_BEAM_WIDTH}")
    sp.add_argument(
        "--length-penalty", type=float, default=DEFAULT_ALPHA, metavar="ALPHA", help="beam: alpha"
    )
    sp.add_argument("--device", choices=DEVICE_CHOICES, default="auto")


def _steps_json(ckpt: Checkpoint, steps: list[SampledToken]) -> list[dict[str, Any]]:
    vocab = ckpt.tokenizer.vocab
    return [
        {"token": vocab[s.token], "prob": s.prob, "top": [[vocab[i], p] for i, p in s.top]} for s in steps
    ]


def _input_ids(ckpt: Checkpoint, prompt: str) -> tuple[list[int], list[str]]:
    """The prompt's ids (a reversal source: its ids then EOS) and its unknown characters."""
    if isinstance(ckpt.model, GPT):
        encoded = ckpt.tokenizer.encode_checked(prompt, max_chars=10_000)
        return encoded.ids, encoded.unknown_chars
    encoded = ckpt.tokenizer.encode_checked(prompt, max_chars=ckpt.config.max_len - 1)  # room for EOS
    return encode_source(ckpt.tokenizer, [prompt])[0].tolist(), encoded.unknown_chars


def _decode(ckpt: Checkpoint, ids: list[int], args: argparse.Namespace) -> dict[str, Any]:
    """Sample, greedy or beam: the JSON fields that say what was written."""
    model, tokenizer, gpt = ckpt.model, ckpt.tokenizer, isinstance(ckpt.model, GPT)
    if args.beam is not None:
        width = check_beam_width(args.beam)
        budget = args.max_new_tokens or (GPT_BEAM_NEW_TOKENS if gpt else ckpt.config.max_len - 1)
        special = SpecialTokens(tokenizer.stop_id, tuple(tokenizer.never_sampled)) if gpt else None
        result = beam_search(model, ids, width, budget, alpha=args.length_penalty, special=special)
        return {
            "text": tokenizer.decode(result.tokens),
            "decoding": "beam",
            "beam": beam_json(result, tokenizer),
        }
    temperature = args.temperature if args.temperature is not None else (GPT_TEMPERATURE if gpt else 0.0)
    sampling = dict(temperature=temperature, top_k=args.top_k, top_p=args.top_p, seed=args.seed)
    if isinstance(model, GPT):
        steps = generate(
            model,
            ids,
            args.max_new_tokens or GPT_NEW_TOKENS,
            never_sampled=tokenizer.never_sampled,
            stop_id=tokenizer.stop_id,
            **sampling,  # type: ignore[arg-type]
        )
    else:
        steps = sample_seq2seq(model, ids, args.max_new_tokens or ckpt.config.max_len - 1, **sampling)  # type: ignore[arg-type]
    return {
        "text": tokenizer.decode([s.token for s in steps]),
        "decoding": "sample" if temperature > 0 else "greedy",
        "tokens": _steps_json(ckpt, steps),
    }


def cmd_generate(args: argparse.Namespace) -> None:
    ckpt = load_checkpoint(args.checkpoint, resolve_device(args.device))
    require_next_token(ckpt.model, "generate")
    ids, unknown = _input_ids(ckpt, args.prompt)
    written = _decode(ckpt, ids, args)
    payload = {"checkpoint": ckpt.name, "prompt": args.prompt, **written, "unknown_characters": unknown}
    if args.json:
        print(json.dumps(payload, ensure_ascii=False))
    elif isinstance(ckpt.model, GPT):
        print(args.prompt + written["text"])
    else:
        print(f"{args.prompt} -> {written['text']}")
