"""Time for the default /train reversal run to reach greedy exact match >= 0.99 at every
training length (3, 5, 7, 10).

    python benchmarks/bench_time_to_accuracy.py [--positions rope] [--device cpu] [--every 250]
        [--size tiny] [--lr 1e-2] [--batch-size 64] [--steps N]

Training time only: the clock pauses while the model is evaluated (200 strings per length)
every --every steps.

    python benchmarks/bench_time_to_accuracy.py --page-run [--positions rope] [--size tiny]

instead starts the /train page's default run as a student's Start does (a run process of
the box's run store, one thread, its evaluations and snapshots included) and prints the
wall-clock seconds until a snapshot shows a clearly anti-diagonal cross-attention head
(score >= 0.6), until the run is done, and its final greedy exact match per length.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import torch

from attention_lab.serving import page_config
from transformer_core.train import TASKS
from transformer_core.train.evaluation import evaluate_reversal
from transformer_core.train.presets import prepare_run
from transformer_core.train.trainer import StepEvent, Trainer

LENGTHS = [3, 5, 7, 10]


def page_run(positions: str, size: str) -> None:
    """The /train default reversal run through the run store, timed from submission."""
    import tempfile

    from attention_lab.serving import RunProgress, RunRequest
    from attention_lab.serving.sqlite_store import SQLiteRunStore
    from transformer_core.interp.heads import anti_diagonal_scores

    with tempfile.TemporaryDirectory() as root:
        store = SQLiteRunStore(Path(root), max_running=1)
        config = page_config("reverse", device="cpu")
        start = time.monotonic()
        run_id = store.submit(RunRequest(config.to_dict(), positions, size, {}, label="bench"))
        progress, seen, clear_at = RunProgress(store.folder(run_id)), 0, None
        while store.info(run_id).active:
            time.sleep(0.2)
            progress.refresh()
            for i in range(seen, len(progress.snapshots)):
                snap = progress.load_snapshot(i)
                n = sum(not t.startswith("<") for t in snap["source_tokens"])
                if clear_at is None and float(anti_diagonal_scores(snap["cross"], n).max()) >= 0.6:
                    clear_at = (time.monotonic() - start, int(snap["step"]))
            seen = len(progress.snapshots)
        done = time.monotonic() - start
        progress.refresh()
        print(f"{positions}: {config.steps} steps, lr {config.lr}; an anti-diagonal head (>= 0.6) "
              f"{'never' if clear_at is None else f'at {clear_at[0]:.1f} s (step {clear_at[1]})'}; "
              f"done in {done:.1f} s; exact match {progress.metrics.get('exact_match')}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", default="rope")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=None, help="default: the /train page's")
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--target", type=float, default=0.99)
    parser.add_argument(
        "--size",
        default=TASKS["reverse"].watched_size,
        help="a model size of the reversal task (tiny, small, ...); default: the /train page's",
    )
    parser.add_argument("--lr", type=float, default=None, help="default: the /train page's")
    parser.add_argument("--batch-size", type=int, default=None, help="default: the /train page's")
    parser.add_argument("--page-run", action="store_true", help="time the /train default run end to end")
    args = parser.parse_args()
    if args.page_run:
        page_run(args.positions, args.size)
        return
    page = page_config(
        "reverse", steps=args.steps, device=args.device, lr=args.lr, batch_size=args.batch_size
    )
    config = dataclasses.replace(
        page, eval_every=0, snapshot_every=0
    )  # the /train run, no periodic evaluations
    model, task = prepare_run(config, args.positions, size=args.size)
    task = dataclasses.replace(task, eval_lengths=(3,), eval_samples=10)  # a cheap final check
    print(f"{args.positions}, {args.size}, lr {config.lr}, batch {config.batch_size}, {config.steps} steps, "
          f"device {model.lm_head.weight.device}, {torch.get_num_threads()} threads")  # fmt: skip
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
