"""Beam search speed on /gpt's model: output tokens per second at widths 1, 4 and 8.

    python benchmarks/bench_beam.py [--checkpoint gpt-sinusoidal] [--new-tokens 64] [--repeats 5]
                                    [--threads N] [--device cpu]

Each search writes --new-tokens tokens after a fixed prompt (a GPT without EOS runs every
step); tokens/s counts the winner's tokens, hypothesis tokens/s counts every beam's. Sampling
(`generate`, temperature 0.8) on the same prompt and length is the baseline. The median of
--repeats runs is printed, after one warm-up run each.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from transformer_core import beam_search, generate, resolve_device
from transformer_core.io import load_checkpoint
from transformer_core.stepping import SpecialTokens

PROMPT = "The return statement"
WIDTHS = (1, 4, 8)


def timed(run, repeats: int) -> float:
    """Median seconds of `repeats` calls, after one warm-up call."""
    run()
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="gpt-sinusoidal")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    ckpt = load_checkpoint(args.checkpoint, device)
    tok = ckpt.tokenizer
    ids = tok.encode(PROMPT)
    special = SpecialTokens(tok.stop_id, tuple(tok.never_sampled))
    n = args.new_tokens
    print(
        f"{ckpt.name} on {device} ({torch.get_num_threads()} threads), prompt {PROMPT!r}, "
        f"{n} new tokens, median of {args.repeats}"
    )

    def sample() -> None:
        generate(ckpt.model, ids, n, temperature=0.8, seed=0, never_sampled=tok.never_sampled)

    base = timed(sample, args.repeats)
    print(f"{'sampling':<12} {n / base:9.1f} tokens/s  {base * 1000:8.1f} ms per search")
    for width in WIDTHS:
        result = beam_search(ckpt.model, ids, width, n, special=special)
        seconds = timed(lambda w=width: beam_search(ckpt.model, ids, w, n, special=special), args.repeats)
        hyp_tokens = sum(len(s.kept) for s in result.steps)
        print(
            f"{'beam ' + str(width):<12} {len(result.tokens) / seconds:9.1f} tokens/s  "
            f"{seconds * 1000:8.1f} ms per search  {hyp_tokens / seconds:9.1f} hypothesis tokens/s  "
            f"{seconds / base:5.2f}x sampling   {tok.decode(result.tokens)[:40]!r}"
        )


if __name__ == "__main__":
    main()
