"""/gpt's whole page run on a new prompt: sampling against beam search, through Streamlit's
AppTest in one process (the router, the view, the charts, no browser).

    python benchmarks/bench_beam_page.py [--width 4] [--new 80] [--prompts 20]

Two sessions, one sampling (the page's default) and one with `decoding=beam`, each get the same
new prompts (a prompt list, each made new with its index), alternating which goes first; the
first two runs of each warm the caches and are left out. Prints each median and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

HOME = Path(__file__).resolve().parents[1] / "app" / "Home.py"
PROMPTS = (
    "The with statement", "def main():", "import os", "class Foo:", "return the", "for i in range",
    "The module", "if __name__", "print(x)", "Raises an error", "while True:", "lambda x:",
)  # fmt: skip


def session(query: dict[str, str]) -> AppTest:
    """A /gpt session opened on `query`."""
    at = AppTest.from_file(str(HOME), default_timeout=120)
    at.run()
    at.switch_page("views/gpt.py")
    at.query_params = query
    at.run()
    return at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=4)
    parser.add_argument("--new", type=int, default=80, help="characters written (the page's default: 80)")
    parser.add_argument("--prompts", type=int, default=20, help="new prompts per decoding")
    args = parser.parse_args()
    base = {"max_new": str(args.new)}
    apps = {"sample": session(base), "beam": session({**base, "decoding": "beam", "beam": str(args.width)})}
    times: dict[str, list[float]] = {mode: [] for mode in apps}
    for i in range(args.prompts + 2):
        for mode in ("sample", "beam") if i % 2 else ("beam", "sample"):
            box = apps[mode].text_area(key="gpt_text").set_value(f"{PROMPTS[i % len(PROMPTS)]} {i}")
            start = time.perf_counter()
            box.run()
            if apps[mode].exception:
                raise SystemExit(f"{mode}: {apps[mode].exception[0].value}")
            if i >= 2:
                times[mode].append(time.perf_counter() - start)
    medians = {mode: statistics.median(t) for mode, t in times.items()}
    for mode, t in times.items():
        print(f"{mode:>6}: median {1000 * medians[mode]:.0f} ms over {len(t)} new prompts")
    print(f"beam width {args.width} / sample: {medians['beam'] / medians['sample']:.2f}")


if __name__ == "__main__":
    main()
