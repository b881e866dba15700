"""Post-LN against Pre-LN, with and without learning-rate warm-up, on the reversal task
(Xiong et al. 2020: Post-LN needs warm-up). Seeded runs; the curves go to --out.

    python benchmarks/bench_block_variants.py [--steps 400] [--seeds 0,1,2] [--lr 0.005]
        [--layers 4] [--out block_variants.jsonl]

Each run trains the shipped reversal size (d_model 64, 4 heads, sinusoidal positions; --layers
per stack) with AdamW, gradient clipping at 1.0 and a cosine schedule, warm-up 0 or 200 steps.
It prints the loss at steps 50, 100, 200 and the last, the largest per-block gradient norm
(before clipping) in the first 100 steps, and exact match on 200 strings of length 10 at the
end. Every step's loss and per-block gradient norms are written to --out, one JSON line per
run. On /train the same comparison is two runs of the form, overlaid under "My runs".
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from transformer_core.train import DoneEvent, StepEvent, Trainer, prepare_run, train_config


def run(norm_position: str, warmup: int, seed: int, args: argparse.Namespace) -> dict:
    train = train_config("reverse", steps=args.steps, lr=args.lr, warmup=warmup, seed=seed, device="cpu",
                         eval_every=0)  # fmt: skip
    model, task = prepare_run(train, "sinusoidal", norm_position=norm_position, n_layers=args.layers)
    losses, norms, metrics = [], [], {}
    for event in Trainer(model, task, train).run():
        if isinstance(event, StepEvent):
            losses.append(round(event.loss, 5))
            norms.append({k: round(v, 4) for k, v in event.grad_norms.items()})
        elif isinstance(event, DoneEvent):
            metrics = event.metrics
    return {
        **{
            "norm_position": norm_position,
            "warmup": warmup,
            "seed": seed,
            "lr": args.lr,
            "layers": args.layers,
        },
        **{"losses": losses, "grad_norms": norms, "exact_match_10": metrics["exact_match"]["10"]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--out", default="block_variants.jsonl", help="the curves, one JSON line per run")
    args = parser.parse_args()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    print(f"reversal, {args.steps} steps, lr {args.lr}, {args.layers} layers per stack")
    print(f"{'norm':>5} {'warm-up':>7} {'seed':>4} {'loss@50':>8} {'@100':>7} {'@200':>7} {'last':>7} "
          f"{'max |g| <100':>12} {'exact@10':>8} {'s':>5}")  # fmt: skip
    with open(args.out, "w") as out:
        for norm_position in ("pre", "post"):
            for warmup in (0, 200):
                for seed in (int(s) for s in args.seeds.split(",")):
                    start = time.perf_counter()
                    r = run(norm_position, warmup, seed, args)
                    out.write(json.dumps(r) + "\n")
                    L = r["losses"]
                    early = max(max(n.values()) for n in r["grad_norms"][:100])
                    seconds, exact = time.perf_counter() - start, r["exact_match_10"]
                    print(
                        f"{norm_position:>5} {warmup:>7} {seed:>4} {L[49]:>8.3f} {L[99]:>7.3f} "
                        f"{L[199]:>7.3f} "
                        f"{L[-1]:>7.3f} {early:>12.2f} {exact:>8.3f} {seconds:>5.0f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
