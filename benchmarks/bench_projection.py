"""PCA against UMAP for the query/key geometry (/heads section 10, /compare): what each costs and
what each keeps, on one head's queries and keys over 16 held-out windows of 64 characters.

    pip install umap-learn   # not a dependency of the lab: this script measures whether it should be
    python benchmarks/bench_projection.py [gpt-sinusoidal gpt-rope ...] [--head 1.0] [--threads 2]

Prints, per checkpoint: the seconds to import umap (numba and its compiler), PCA's and UMAP's
seconds (UMAP's first call in the process, which compiles, and a second one), how much of the
position a straight line through each picture recovers (R² of queries, of keys), and each
picture's trustworthiness (sklearn, 10 neighbours: 1 when every point's 2-D neighbours were its
neighbours in d_head dimensions too).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from transformer_core.interp.geometry import head_vectors, pca_2d, position_r2
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.held_out import held_out_data

WINDOWS, CHARS = 16, 64  # as the app's geometry reads


def seconds(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "checkpoints", nargs="*", default=["gpt-sinusoidal", "gpt-learned", "gpt-rope", "gpt-alibi"]
    )
    parser.add_argument("--head", default="1.0", help="layer.head")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    layer, head = (int(x) for x in args.head.split("."))
    try:
        (umap, _), imported = seconds(lambda: (__import__("umap"), None))
        from sklearn.manifold import trustworthiness
    except ImportError:
        raise SystemExit("umap-learn is not installed: pip install umap-learn") from None
    print(f"import umap: {imported:.2f} s; head {layer}.{head}, {WINDOWS} windows of {CHARS} characters")
    print(f"{'checkpoint':<16}{'method':<12}{'seconds':>9}{'R² q':>7}{'R² k':>7}{'trust':>7}")
    for name in args.checkpoints:
        ckpt = load_checkpoint(name)
        held = held_out_data(ckpt, WINDOWS)
        texts = [ckpt.tokenizer.decode(list(s[:CHARS])) for s in held.sequences] if held else ["hello world"]
        v = head_vectors(ckpt.model, ckpt.tokenizer, texts, layer, head)
        x, n = np.concatenate([v.queries, v.keys]), len(v.queries)
        pictures = {"PCA": seconds(lambda x=x: pca_2d(x)[0])}
        for run in ("UMAP 1st", "UMAP 2nd"):
            reducer = umap.UMAP(n_components=2, n_neighbors=15, random_state=0)
            pictures[run] = seconds(lambda x=x, r=reducer: r.fit_transform(x))
        for method, (coords, took) in pictures.items():
            r2q, r2k = position_r2(coords[:n], v.positions), position_r2(coords[n:], v.positions)
            trust = trustworthiness(x, coords, n_neighbors=10)
            print(f"{name:<16}{method:<12}{took:>9.3f}{r2q:>7.2f}{r2k:>7.2f}{trust:>7.3f}")


if __name__ == "__main__":
    main()
