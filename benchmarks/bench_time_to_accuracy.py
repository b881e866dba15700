"""Time for the default /train reversal run to reach greedy exact match >= 0.99 at every
training length (3, 5, 7, 10).

    python benchmarks/bench_time_to_accuracy.py [--positions rope] [--device cpu] [--every 250]

Training time only: the clock pauses while the model is evaluated (200 strings per length)
every --every steps.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import torch

from serving import page_config
from transformer_core.train.evaluation import evaluate_reversal
from transformer_core.train.presets import prepare_run
from transformer_core.train.trainer import StepEvent, Trainer

LENGTHS = [3, 5, 7, 10]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", default="rope")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=None, help="default: the /train page's")
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--target", type=float, default=0.99)
    args = parser.parse_args()
    config = dataclasses.replace(  # the default /train run, without its periodic evaluations
        page_config("reverse", steps=args.steps, device=args.device), eval_every=0, snapshot_every=0
    )
    model, task = prepare_run(config, args.positions)
    task = dataclasses.replace(task, eval_lengths=(3,), eval_samples=10)  # a cheap final check
    print(f"{args.positions}, device {model.lm_head.weight.device}, {torch.get_num_threads()} threads")
    trained, mark = 0.0, time.perf_counter()
    for event in Trainer(model, task, config).run():
        if not isinstance(event, StepEvent) or event.step % args.every:
            continue
        trained += time.perf_counter() - mark
        result = evaluate_reversal(model, task.tokenizer, LENGTHS, 200)["exact_match"]
        model.train()
        worst = min(result.values())
        print(f"step {event.step:5d}  train {trained:6.1f} s  exact match {result}", flush=True)
        if worst >= args.target:
            print(f"reached {args.target} at every length after {event.step} steps, {trained:.1f} s")
            return
        mark = time.perf_counter()
    print(f"did not reach {args.target} within {config.steps} steps ({trained:.1f} s)")


if __name__ == "__main__":
    main()
