"""Time of the `heads` analysis of one checkpoint: detectors, full ablation sweep, gradient
proxy, rollout and logit lens (what the /heads page computes once per checkpoint weights).

    python benchmarks/bench_heads.py [gpt-rope reverse-rope ...] [--repeats 3] [--threads 2]

Prints, per checkpoint, the median wall-clock seconds of each part and of the whole, over
--repeats runs after one warm-up (model loaded once, CPU).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from transformer_core.interp.report import report_detectors, report_flow, report_importance
from transformer_core.io.checkpoint import load_checkpoint


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoints", nargs="*", default=["gpt-rope", "reverse-rope"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.repeats}")
    print(f"{'checkpoint':<20}{'heads':>6}{'detect s':>10}{'sweep+grad s':>14}{'flow s':>8}{'total s':>9}")
    for name in args.checkpoints:
        ckpt = load_checkpoint(name)
        cfg = ckpt.config
        n = cfg.n_layers * cfg.n_heads * (1 if cfg.arch == "gpt" else 3)
        parts = [
            median_seconds(lambda f=f, c=ckpt: f(c, None), args.repeats)
            for f in (report_detectors, report_importance, report_flow)
        ]
        print(f"{name:<20}{n:>6}{parts[0]:>10.2f}{parts[1]:>14.2f}{parts[2]:>8.2f}{sum(parts):>9.2f}")


if __name__ == "__main__":
    main()
