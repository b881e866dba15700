"""Measured forward time against the time the FLOP count predicts, across sizes (/cost's
section 4, many sizes at once).

    python benchmarks/bench_cost.py [--device cpu] [--repeats 3]

For GPTs of growing d_model and T (batch 1, random weights) it prints the counted FLOPs
(transformer_core.cost.forward_flops), the fastest of --repeats forward passes, the time the
count predicts at this machine's matrix-product rate (a 256 x 256 product; and a 1024 x 1024
one, for large shapes), and the ratio measured / predicted.
"""

from __future__ import annotations

import argparse

import torch

from transformer_core import cost
from transformer_core.config import ModelConfig

SIZES = [
    (64, 4, 64),
    (128, 4, 128),
    (128, 4, 512),
    (256, 8, 256),
    (256, 8, 1024),
    (512, 8, 512),
    (512, 8, 2048),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    small = cost.matmul_rate(256, device=args.device)
    large = cost.matmul_rate(1024, device=args.device)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.device}")
    print(f"matrix-product rate: 256x256 {small / 1e9:.1f} GFLOP/s, 1024x1024 {large / 1e9:.1f} GFLOP/s")
    print(f"{'d_model':>7} {'T':>5} {'GFLOP':>8} {'measured ms':>12} {'predicted ms':>13} {'ratio':>6}")
    for d, heads, T in SIZES:
        config = ModelConfig(vocab_size=100, d_model=d, n_heads=heads, n_layers=4, d_ff=4 * d, max_len=T)
        flops = cost.forward_flops(config, T)
        seconds = cost.time_forward(config, T, repeats=args.repeats, device=args.device)
        predicted = flops / small
        ms, ratio = seconds * 1e3, seconds / predicted
        print(f"{d:>7} {T:>5} {flops / 1e9:>8.3f} {ms:>12.2f} {predicted * 1e3:>13.2f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
