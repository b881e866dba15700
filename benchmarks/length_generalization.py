"""Length generalisation of string reversal: one row per positional scheme.

    python benchmarks/length_generalization.py [--steps 3000] [--samples 200] [--out PATH]

Rows "<scheme>" evaluate the shipped reverse-<scheme> checkpoints (trained on lengths
3-10). Rows "<scheme> + randomized positions" train the same model with randomized
positional encodings (Ruoss et al. 2023: each batch uses an increasing random subset of
positions 0..31) and evaluate it with the ordinary positions 0..n. Greedy exact match
and teacher-forced token accuracy at lengths 3, 5, 7, 10, 12, 15 are printed and written
to checkpoints/length_generalization.json, which the /train page shows.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import sys
import time
from pathlib import Path

from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.positional import POSITION_SCHEMES
from transformer_core.train.evaluation import evaluate_reversal
from transformer_core.train.presets import REPORT_LENGTHS, prepare_run
from transformer_core.train.trainer import TrainConfig, Trainer

ROOT = Path(__file__).resolve().parents[1]

LENGTHS = list(REPORT_LENGTHS)


def row_text(name: str, result: dict) -> str:
    em = " ".join(f"{result['exact_match'][str(n)]:5.2f}" for n in LENGTHS)
    tok = " ".join(f"{result['token_accuracy'][str(n)]:5.2f}" for n in LENGTHS)
    return f"{name:<36} exact {em}   token {tok}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--out", default=str(ROOT / "checkpoints" / "length_generalization.json"))
    args = parser.parse_args()
    print(f"{'':<36} lengths {LENGTHS}")
    rows: dict[str, dict] = {}
    for scheme in POSITION_SCHEMES:
        ckpt = load_checkpoint(f"reverse-{scheme}")
        rows[scheme] = evaluate_reversal(ckpt.model, ckpt.tokenizer, LENGTHS, args.samples)
        print(row_text(scheme, rows[scheme]), flush=True)
    # randomizing positions changes nothing for a scheme that uses none
    for scheme in [name for name, cls in POSITION_SCHEMES.items() if cls.carries_position()]:
        config = TrainConfig(
            task="reverse", steps=args.steps, device="cpu", eval_every=0, random_positions=True
        )
        model, task = prepare_run(config, scheme)
        task = dataclasses.replace(task, eval_lengths=(3,), eval_samples=20)  # the real evaluation follows
        t0 = time.perf_counter()
        for _ in Trainer(model, task, config).run():
            pass
        name = f"{scheme} + randomized positions"
        rows[name] = evaluate_reversal(model, task.tokenizer, LENGTHS, args.samples)
        rows[name]["train_seconds"] = round(time.perf_counter() - t0, 1)
        print(row_text(name, rows[name]), flush=True)
    payload = {
        "command": "python benchmarks/length_generalization.py " + shlex.join(sys.argv[1:]),
        "lengths": LENGTHS,
        "samples": args.samples,
        "train_lengths": [3, 10],
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
