"""Sampling cost per character: what a /gpt page run on new input mostly spends.

    python benchmarks/bench_sampling.py [--tokens 80] [--repeats 5] [NAME ...]

For each shipped GPT (default: every gpt-* but gpt-induction), 1 torch thread as the app
runs: milliseconds per sampled token (the fastest of --repeats runs of `generate`, --tokens
each, KV cache on), and /gpt's whole computation of one new prompt (the traced pass of the
prompt plus the sample, `view_and_sample`), median CPU ms of 10.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from attention_lab.models.explorer_compute import view_and_sample
from transformer_core import InferenceOptions
from transformer_core.generation import generate
from transformer_core.io import load_checkpoint
from transformer_core.io.checkpoint import SHIPPED_NAMES

PROMPT = "The with statement is used to"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=[n for n in SHIPPED_NAMES if n.startswith("gpt-")][:-1])
    parser.add_argument("--tokens", type=int, default=80)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    options = InferenceOptions()
    print(f"torch {torch.__version__}, 1 thread; {args.tokens} tokens")
    print(f"{'checkpoint':<16} {'ms/token':>9} {'page ms':>8}")
    for name in args.names:
        ckpt = load_checkpoint(name)
        ids = ckpt.tokenizer.encode(PROMPT)
        generate(ckpt.model, ids, 10, seed=0, options=options)  # warm-up
        best = float("inf")
        for seed in range(args.repeats):
            start = time.perf_counter()
            generate(ckpt.model, ids, args.tokens, seed=seed, temperature=0.8, options=options)
            best = min(best, time.perf_counter() - start)
        page = []
        for i in range(10):
            start = time.process_time()
            view_and_sample(ckpt, f"{PROMPT} {i}", args.tokens, 0.8, 0, 1.0, i, options)
            page.append(time.process_time() - start)
        print(f"{name:<16} {best / args.tokens * 1e3:>9.3f} {statistics.median(page) * 1e3:>8.1f}")


if __name__ == "__main__":
    main()
