"""Length generalisation of string reversal: one row per architecture and positional scheme.

    python benchmarks/length_generalization.py [--steps 3000] [--samples 200] [--seeds 3]
                                               [--rows NAME ...] [--no-randomized] [--out PATH]

Rows "<scheme>" (every scheme of POSITION_SCHEMES) are Transformers, rows "gru" and
"bahdanau" the recurrent encoder-decoders without and with additive attention. Seed 0 of a
row is its shipped reverse-<name> checkpoint; seeds 1.. are trained here with the same
recipe (the command line's defaults: --steps steps of batch 64 on lengths 3-10, seed s).
Rows "<scheme> + randomized positions" train the Transformer with randomized positional
encodings (Ruoss et al. 2023: each batch uses an increasing random subset of positions
0..31, one seed) and evaluate it with the ordinary positions 0..n. Both metrics at lengths
3, 5, 7, 10, 12, 15 (200 strings each): greedy exact match (the whole reversal right) and
teacher-forced token accuracy (each next character right given the true prefix, EOS
included); a row's values are the mean over its seeds, with the seeds' own values beside.
They are printed and written to checkpoints/length_generalization.json (the /train page's
table). --rows recomputes only those rows and keeps the file's others.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from transformer_core.config import RECURRENT_KINDS
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.positional import POSITION_SCHEMES
from transformer_core.train import REPORT_LENGTHS, TRAIN_LENGTHS, prepare_run, train_config
from transformer_core.train.evaluation import evaluate_reversal
from transformer_core.train.trainer import Trainer

ROOT = Path(__file__).resolve().parents[1]
LENGTHS = list(REPORT_LENGTHS)
METRICS = ("exact_match", "token_accuracy")
RANDOMIZED = " + randomized positions"


@dataclasses.dataclass(frozen=True)
class RowSpec:
    """One row: a Transformer with a scheme, or a recurrent kind (positions none)."""

    name: str
    positions: str
    model: str
    randomized: bool = False

    @property
    def checkpoint(self) -> str | None:
        return None if self.randomized else f"reverse-{self.name}"


def row_specs(randomized: bool) -> list[RowSpec]:
    rows = [RowSpec(s, s, "transformer") for s in POSITION_SCHEMES]
    rows += [RowSpec(kind, "none", kind) for kind in RECURRENT_KINDS]
    if randomized:  # randomizing positions changes nothing for a scheme that uses none
        rows += [
            RowSpec(s + RANDOMIZED, s, "transformer", randomized=True)
            for s, cls in POSITION_SCHEMES.items()
            if cls.carries_position()
        ]
    return rows


def row_text(name: str, result: dict) -> str:
    em = " ".join(f"{result['exact_match'][str(n)]:5.2f}" for n in LENGTHS)
    tok = " ".join(f"{result['token_accuracy'][str(n)]:5.2f}" for n in LENGTHS)
    return f"{name:<36} exact {em}   token {tok}"


def trained(spec: RowSpec, seed: int, steps: int, samples: int) -> dict[str, Any]:
    """Train one seed of a row's recipe and measure it (plus its training seconds)."""
    config = train_config(
        "reverse", steps=steps, seed=seed, device="cpu", eval_every=0, random_positions=spec.randomized
    )
    model, task = prepare_run(config, spec.positions, model=spec.model)
    task = dataclasses.replace(task, eval_lengths=(3,), eval_samples=20)  # the real evaluation follows
    start = time.perf_counter()
    for _ in Trainer(model, task, config).run():
        pass
    result = evaluate_reversal(model, task.tokenizer, LENGTHS, samples)
    return {**result, "train_seconds": round(time.perf_counter() - start, 1)}


def measured_row(spec: RowSpec, seeds: int, steps: int, samples: int) -> dict[str, Any]:
    """Seed 0: the shipped checkpoint (randomized rows: trained here); seeds 1..: trained here."""
    per_seed = []
    for seed in range(seeds if not spec.randomized else 1):
        if seed == 0 and spec.checkpoint is not None:
            ckpt = load_checkpoint(spec.checkpoint)
            per_seed.append(evaluate_reversal(ckpt.model, ckpt.tokenizer, LENGTHS, samples))
        else:
            per_seed.append(trained(spec, seed, steps, samples))
        print(row_text(f"  {spec.name} seed {seed}", per_seed[-1]), flush=True)
    return summarize(spec, per_seed)


def summarize(spec: RowSpec, per_seed: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean over seeds under the metric keys the /train page reads, the seeds' values beside."""
    row: dict[str, Any] = {
        "arch": spec.model,
        "positions": spec.positions,
        "seeds": list(range(len(per_seed))),
    }
    for metric in METRICS:
        row[metric] = {str(n): statistics.fmean(r[metric][str(n)] for r in per_seed) for n in LENGTHS}
    if len(per_seed) > 1:
        row["per_seed"] = {m: {str(n): [r[m][str(n)] for r in per_seed] for n in LENGTHS} for m in METRICS}
        row["std"] = {
            m: {str(n): statistics.stdev(r[m][str(n)] for r in per_seed) for n in LENGTHS} for m in METRICS
        }
    seconds = [r["train_seconds"] for r in per_seed if "train_seconds" in r]
    if seconds:
        row["train_seconds"] = seconds[0] if len(seconds) == 1 else seconds
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3, help="seeds per row (seed 0: the shipped model)")
    parser.add_argument("--rows", nargs="*", default=None, metavar="NAME", help="only these rows")
    parser.add_argument("--no-randomized", action="store_true", help="skip the randomized-position rows")
    parser.add_argument("--out", default=str(ROOT / "checkpoints" / "length_generalization.json"))
    args = parser.parse_args()
    out = Path(args.out)
    kept = json.loads(out.read_text()).get("rows", {}) if args.rows and out.is_file() else {}
    specs = [s for s in row_specs(not args.no_randomized) if args.rows is None or s.name in args.rows]
    print(f"{'':<36} lengths {LENGTHS}")
    rows = dict(kept)
    for spec in specs:
        rows[spec.name] = measured_row(spec, args.seeds, args.steps, args.samples)
        n_seeds = len(rows[spec.name]["seeds"])
        print(row_text(spec.name + (f" (mean of {n_seeds})" if n_seeds > 1 else ""), rows[spec.name]))
    order = [s.name for s in row_specs(True)]
    rows = dict(sorted(rows.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
    payload = {
        "command": "python benchmarks/length_generalization.py " + shlex.join(sys.argv[1:]),
        "lengths": LENGTHS,
        "samples": args.samples,
        "train_lengths": list(TRAIN_LENGTHS),
        "steps": args.steps,
        "metrics": {
            "exact_match": "greedy decoding, whole reversal right",
            "token_accuracy": "teacher-forced, each next token right given the true prefix (EOS included)",
        },
        "rows": rows,
    }
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
