"""Time of the full /heads analysis of one checkpoint: detectors, the ablation sweep and
gradient proxy on held-out data, the induction-probe sweep, rollout and logit lens,
composition, direct logit attribution and activation patching (what the /heads page computes
once per checkpoint weights and inputs), and the "why a head attends" analyses: one query row's
score split (the last layer's head 0, query 1 of the first probe), one head's query/key geometry
and the profiles over 64 held-out windows (a GPT's self-attention only; "-" otherwise).

    python benchmarks/bench_heads.py [gpt-rope reverse-rope ...] [--repeats 3] [--threads 2]
    python benchmarks/bench_heads.py --gpt2-small

Prints, per checkpoint (default: every shipped GPT), the median wall-clock seconds of each
part and of the whole, over --repeats runs after one warm-up (model loaded once, CPU).
--gpt2-small imports a GPT-2-small-shaped model (random weights, as benchmarks/bench_import.py
writes it) and times the "why" analyses alone (explain, geometry, profile: it reads the default
corpus, as any imported model does), with the profile job's peak memory.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from transformer_core.interp.decompose import explain
from transformer_core.interp.geometry import qk_geometry
from transformer_core.interp.profiles import profile_heads
from transformer_core.interp.report import (
    probe_set_of,
    report_attribution,
    report_composition,
    report_detectors,
    report_flow,
    report_importance,
    report_induction_probe,
    report_patching,
)
from transformer_core.io.checkpoint import SHIPPED_NAMES, Checkpoint, load_checkpoint
from transformer_core.models import GPT
from transformer_core.train import checkpoint_recipe

PARTS: dict[str, Callable[[Checkpoint], object]] = {
    "detect": lambda c: report_detectors(c, None),
    "sweep": lambda c: report_importance(c, None),
    "probe": lambda c: report_induction_probe(c, None),
    "flow": lambda c: report_flow(c, None),
    "compose": report_composition,
    "dla": lambda c: report_attribution(c, None),
    "patch": lambda c: report_patching(c, *checkpoint_recipe(c.config.arch, c.training_task).patch_pair),
    "explain": lambda c: explain(
        c, probe_set_of(c, None).texts[0], KIND[c.config.arch], c.config.n_layers - 1, 0, 1
    ),
    "geometry": lambda c: (
        qk_geometry(c.model, c.tokenizer, probe_set_of(c, None).texts, 0, 0) if gpt(c) else None
    ),
    "profile": lambda c: profile_heads(c) if gpt(c) else None,
}
KIND = {"gpt": "self", "seq2seq": "cross"}  # the kind a head is split in
GPT_ONLY = ("geometry", "profile")
WHY = ("explain", "geometry", "profile")  # the "why a head attends" analyses


def gpt(ckpt: Checkpoint) -> bool:
    return isinstance(ckpt.model, GPT)


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gpt2_small(args: argparse.Namespace) -> None:
    """The why-analyses of a GPT-2-small-shaped import, and the profile job's peak memory."""
    import resource
    import sys
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_import import write_gpt2

    from transformer_core.io.importers import import_model

    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "gpt2", Path(tmp) / "imported"
        source.mkdir()
        write_gpt2(source)
        import_model(source, "hf", out)
        ckpt = load_checkpoint(str(out))
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        cfg = ckpt.config
        print(f"GPT-2 small shape ({cfg.n_layers} x {cfg.n_heads} heads), peak RSS {before:,.0f} MiB loaded")
        for part in WHY:
            took = median_seconds(lambda f=PARTS[part]: f(ckpt), args.repeats)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{part:<10}{took:>8.2f} s   peak RSS so far {peak:,.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    gpts = [n for n in SHIPPED_NAMES if n.startswith("gpt-")]
    parser.add_argument("checkpoints", nargs="*", default=gpts)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gpt2-small", action="store_true", help="a GPT-2-small-shaped import instead")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.gpt2_small:
        return gpt2_small(args)
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.repeats}, seconds")
    print(f"{'checkpoint':<16}{'heads':>6}" + "".join(f"{p:>9}" for p in PARTS) + f"{'total':>9}")
    for name in args.checkpoints:
        ckpt = load_checkpoint(name)
        cfg = ckpt.config
        n = cfg.n_layers * cfg.n_heads * (1 if cfg.arch == "gpt" else 3)
        parts = [median_seconds(lambda f=f, c=ckpt: f(c), args.repeats) for f in PARTS.values()]
        skipped = () if gpt(ckpt) else GPT_ONLY  # what reads a GPT's self-attention only
        shown = ["        -" if p in skipped else f"{t:>9.2f}" for p, t in zip(PARTS, parts, strict=True)]
        print(f"{name:<16}{n:>6}" + "".join(shown) + f"{sum(parts):>9.2f}")


if __name__ == "__main__":
    main()
