"""Server-side cost of one GPT-explorer rerun with a 64-character prompt and the full grid.

    python benchmarks/bench_explorer.py [--checkpoint gpt-sinusoidal] [--repeats 5] [--threads N]

Prints two views of the same work:
1. direct calls of the functions the page uses (trace, sampling, every figure, its JSON),
   uncached, each the median of --repeats runs, made from a worker thread as Streamlit does;
2. the real page script through Streamlit's AppTest: a cold run (nothing cached), then
   warm reruns (what a click on an unchanged view costs), and a rerun after a toggle.
Plus the size of the figure JSON the browser receives (fig.to_json()).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path

import streamlit  # noqa: F401  (configures its loggers, silenced next)
import torch
from lab import explorer as ex
from lab import plots

from transformer_core.io.checkpoint import load_checkpoint

for _name in list(logging.root.manager.loggerDict):
    if _name.startswith("streamlit"):  # "no runtime found" warnings are expected outside a server
        logging.getLogger(_name).setLevel(logging.ERROR)

ROOT = Path(__file__).resolve().parents[1]

PROMPT = "The with statement is used to wrap the execution of a block with"  # 64 characters
assert len(PROMPT) == 64


def median_ms(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def direct(name: str, repeats: int) -> None:
    ckpt = load_checkpoint(name, "cpu")
    cfg = ckpt.config
    opts = ex.options_key()
    print(f"checkpoint {name}: {cfg.n_layers} layers x {cfg.n_heads} heads, d_model {cfg.d_model}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads")
    print(f"prompt: {len(PROMPT)} characters, sampling 80 new characters\n")

    t_trace, view = median_ms(lambda: ex.gpt_view_plain(ckpt, PROMPT, opts), repeats)
    t_sample, _ = median_ms(lambda: ex.generate_plain(ckpt, PROMPT, 80, 0.8, 0, 1.0, 0, opts), repeats)
    tokens, att = view.tokens, view.attention

    def figures() -> dict[str, object]:
        steps = ex.query_steps(view.records[0], 0, len(tokens) - 1)
        best = ex.top_tokens(view.next_probs, ckpt.tokenizer, 10)
        return {
            "grid (4x4, clickable)": plots.attention_grid(att, tokens, tokens, cell_px=110, colorbar=False,
                                                          clickable=True, selected=(0, 0)),
            "head view": plots.head_heatmap(att[0, 0], tokens, tokens, "Layer 0 head 0"),
            "next-character bars": plots.token_bars([b[1] for b in best], {"p": [b[2] for b in best]}),
            "query vector": plots.vector_bars({"q": steps.q}),
            "key matrix": plots.matrix_heatmap(steps.k, tokens),
            "weights bars": plots.token_bars(tokens, {"weight": steps.weights}),
            "output vector": plots.vector_bars({"out": steps.output}),
        }

    t_figs, figs = median_ms(figures, repeats)
    t_json, payloads = median_ms(lambda: {k: f.to_json() for k, f in figs.items()}, repeats)
    total = sum(len(p.encode()) for p in payloads.values())
    print("direct calls (median, uncached)")
    print(f"  trace_gpt + capture to numpy   {t_trace:8.1f} ms")
    print(f"  sample 80 characters           {t_sample:8.1f} ms")
    print(f"  build all 7 figures            {t_figs:8.1f} ms")
    print(f"  fig.to_json() for all 7        {t_json:8.1f} ms")
    print(f"  sum                            {t_trace + t_sample + t_figs + t_json:8.1f} ms")
    print("\nfigure JSON payload")
    for key, payload in payloads.items():
        print(f"  {key:<28}{len(payload.encode()):>10,} bytes")
    print(f"  {'all figures':<28}{total:>10,} bytes\n")


def through_apptest(name: str, repeats: int) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    at.run()
    at.switch_page("views/gpt.py")
    at.query_params = {"checkpoint": name, "text": PROMPT, "max_new": "80"}
    start = time.perf_counter()
    at.run()
    cold = (time.perf_counter() - start) * 1000
    if at.exception:
        raise SystemExit(f"page failed: {at.exception[0].value}")
    warm, _ = median_ms(at.run, repeats)
    at.toggle(key="gpt_nopos").set_value(True)
    start = time.perf_counter()
    at.run()
    toggled = (time.perf_counter() - start) * 1000
    grid = next(c for c in at.get("plotly_chart") if c.key == "gpt_self_grid")
    sent = sum(len(c.proto.spec.encode()) for c in at.get("plotly_chart"))
    print("whole page through AppTest (includes AppTest's own polling, a few ms)")
    print(f"  cold run (model load + nothing cached)  {cold:8.1f} ms")
    print(f"  warm rerun, same view (median)          {warm:8.1f} ms")
    print(f"  rerun after a toggle (new trace+sample) {toggled:8.1f} ms")
    print(f"  grid figure as sent                     {len(grid.proto.spec.encode()):>8,} bytes")
    print(f"  all {len(at.get('plotly_chart'))} figures as sent                  {sent:>8,} bytes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="gpt-sinusoidal")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads (default: torch's choice, usually all cores)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    # Streamlit runs each page in a script thread, not the main thread; torch's intra-op
    # thread pool behaves very differently there on a busy machine (on a 2-core box with
    # training running, sampling took 9 s in the main thread and 0.15 s in a thread), so
    # time the direct calls where the server makes them.
    worker = threading.Thread(target=direct, args=(args.checkpoint, args.repeats))
    worker.start()
    worker.join()
    through_apptest(args.checkpoint, args.repeats)


if __name__ == "__main__":
    main()
