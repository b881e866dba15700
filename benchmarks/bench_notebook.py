"""The lab outside Streamlit: the size of a view kept as one offline HTML file, the time to
build a notebook view, and the widget's first draw in a real JupyterLab.

    python benchmarks/bench_notebook.py                 # sizes and build times, then JupyterLab
    python benchmarks/bench_notebook.py --no-jupyterlab # sizes and build times only

Prints, per view (/gpt's prompt on each shipped GPT's shape, a reversal, GPT-2-small's shape
on random weights): the offline file's size (kB) and how many heads' large maps it keeps, and
the median milliseconds of show() (trace to widget) over --repeats. In JupyterLab (headless
Chromium, 1280 x 720): seconds from "Run All Cells" to the first view's three charts drawn, the
median over --jupyter-runs fresh kernels of docs/notebooks/researcher-walk.ipynb.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from attention_lab.notebook import AttentionSet, show
from attention_lab.testing.servers import running_jupyterlab

ROOT = Path(__file__).resolve().parents[1]
DRAWN = "() => document.querySelectorAll('.lab-chart[data-drawn]').length >= 3"  # a view: grid, head, walk
VIEWS = {
    "gpt-rope, 'The with statement'": ("gpt-rope", "The with statement"),
    "gpt-induction, 14 characters": ("gpt-induction", "qwxvzkjqwxvzkj"),
    "reverse-rope, 'attention'": ("reverse-rope", "attention"),
}


def gpt2_shaped(tokens: int) -> AttentionSet:
    """12 layers x 12 heads of random causal weights over `tokens` tokens (GPT-2 small's shape)."""
    rng = np.random.default_rng(0)
    w = np.tril(rng.random((12, 12, tokens, tokens), dtype=np.float32))
    w /= w.sum(-1, keepdims=True)
    labels = [f"t{i}" for i in range(tokens)]
    return AttentionSet("GPT-2-small shape", {"self": w}, {"self": (labels, labels)})


def sizes(repeats: int) -> None:
    print(f"{'view':<36}{'file kB':>9}{'heads kept':>12}{'show() ms':>11}")
    folder = Path(tempfile.mkdtemp())
    cases = {name: (lambda a=args: show(*a)) for name, args in VIEWS.items()}
    for tokens in (32, 128):
        cases[f"GPT-2-small shape, {tokens} tokens"] = lambda t=tokens: show(gpt2_shaped(t))
    for name, build in cases.items():
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            view = build()
            times.append(1000 * (time.perf_counter() - start))
        path = view.to_html(folder / "view.html")
        left = "left out" in path.read_text()
        print(f"{name:<36}{path.stat().st_size / 1000:>9.0f}{'some' if left else 'all':>12}"
              f"{statistics.median(times):>11.0f}")  # fmt: skip
    shutil.rmtree(folder)


def jupyterlab(runs: int) -> None:
    from playwright.sync_api import sync_playwright

    from attention_lab.testing.chromium import CHROMIUM, CHROMIUM_ARGS

    seconds = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(runs):
            folder = Path(tempfile.mkdtemp())
            shutil.copy(ROOT / "docs" / "notebooks" / "researcher-walk.ipynb", folder / "walk.ipynb")
            with running_jupyterlab(folder) as url:
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.set_default_timeout(180_000)
                page.goto(url.format(path="walk.ipynb"))
                page.get_by_text("Python 3 (ipykernel) | Idle").wait_for()
                page.get_by_role("menuitem", name="Run").click()
                start = time.perf_counter()
                page.locator("[data-command='runmenu:run-all']").click()
                page.wait_for_function(DRAWN)
                seconds.append(time.perf_counter() - start)
                page.close()
            shutil.rmtree(folder, ignore_errors=True)
        browser.close()
    each = ", ".join(f"{s:.2f}" for s in seconds)
    print(f"JupyterLab, Run All to the first view drawn: median {statistics.median(seconds):.2f} s ({each})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jupyter-runs", type=int, default=3)
    parser.add_argument("--no-jupyterlab", action="store_true")
    args = parser.parse_args()
    sizes(args.repeats)
    if not args.no_jupyterlab:
        jupyterlab(args.jupyter_runs)


if __name__ == "__main__":
    main()
