"""Sampling cost per character: what a /gpt page run on new input mostly spends.

    python benchmarks/bench_sampling.py [--tokens 80] [--repeats 5] [NAME ...]
    python benchmarks/bench_sampling.py --mix 120       # the students' /gpt draws of bench_explore

For each shipped GPT (default: every gpt-* but gpt-induction), 1 torch thread as the app
runs: milliseconds per sampled token (the fastest of --repeats runs of `generate`, --tokens
each, KV cache on; past the model's 128 positions the window slides and every token is a
whole pass), and /gpt's whole computation of one new prompt (the traced pass of the prompt
plus the sample, `view_and_sample`), median CPU ms of 10.

--mix N: `view_and_sample` of the first N /gpt links that bench_explore's students draw
(seeded: their checkpoints, texts, switches and sampling settings, max_new up to 200), CPU ms
mean, median and 90th percentile (each draw the least of 3 runs), and the mean per max_new.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from urllib.parse import parse_qs, urlsplit

import torch

from attention_lab.models.explorer_compute import view_and_sample
from attention_lab.testing.explore import explore_link, shipped_models
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
    parser.add_argument("--mix", type=int, default=0, help="then so many of the exploring mix's /gpt draws")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.mix:
        exploring_mix(args.mix)
        return
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


def exploring_mix(n: int, seed: int = 7) -> None:
    """view_and_sample of the first n /gpt links the exploring students draw (app.testing.explore)."""
    rng, models, loaded = random.Random(seed), shipped_models(), {}
    costs: list[tuple[int, float]] = []  # (max_new, CPU ms)
    while len(costs) < n:
        link = urlsplit(explore_link(rng, models))
        if link.path != "/gpt":
            continue
        q = {k: v[0] for k, v in parse_qs(link.query).items()}
        if q["checkpoint"] not in loaded:  # once per checkpoint (setdefault would load every draw)
            loaded[q["checkpoint"]] = load_checkpoint(q["checkpoint"])
        ckpt = loaded[q["checkpoint"]]
        ablate = frozenset({("self", *map(int, q["ablate"].split(".")))}) if "ablate" in q else frozenset()
        options = InferenceOptions(positions="nopos" not in q, causal="nocausal" not in q, ablate=ablate)
        sampling = (
            int(q["max_new"]),
            float(q["temperature"]),
            int(q["top_k"]),
            float(q["top_p"]),
            int(q["seed"]),
        )
        runs = []
        for _ in range(3):  # the least of three: this box's neighbours move single runs by 20%
            start = time.process_time()
            view_and_sample(ckpt, q["text"], *sampling, options)
            runs.append((time.process_time() - start) * 1e3)
        costs.append((sampling[0], min(runs)))
    ms = sorted(c for _, c in costs)
    mean, median, p90 = statistics.mean(ms), statistics.median(ms), ms[int(0.9 * n)]
    print(f"{n} /gpt draws: mean {mean:.1f} ms, median {median:.1f}, p90 {p90:.1f}")
    for max_new in sorted({m for m, _ in costs}):
        mine = [c for m, c in costs if m == max_new]
        print(f"  max_new {max_new:>3}: {len(mine):>3} draws, mean {statistics.mean(mine):.1f} ms")


if __name__ == "__main__":
    main()
