"""What Streamlit and plotly.js cost in the browser before any figure of ours is drawn.

    python benchmarks/bench_plotly_floor.py [--figures 0 1 4 8] [--repeats 3]

Serves a bare Streamlit page holding N trivial plotly heatmaps (10 x 10) and times it like
bench_browser.py (fresh headless Chromium context at 1280 x 720 per visit): the difference
between 0 and 1 figure is plotly.js itself (loading and evaluating its bundle), the slope
after that the cost per figure. Why: it bounds what any page drawing its maps with
st.plotly_chart can reach on this machine (the lecturer's 2 s target).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench_browser import CHROMIUM, CHROMIUM_ARGS, server, visit
from playwright.sync_api import sync_playwright

PAGE = """
import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.title("plotly floor")
for i in range(int(st.query_params.get("figures", "0"))):
    st.plotly_chart(go.Figure(go.Heatmap(z=np.random.default_rng(i).random((10, 10)))), key=f"fig{i}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figures", type=int, nargs="+", default=[0, 1, 4, 8])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "floor.py"
        script.write_text(PAGE)
        with server(script) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            visit(browser, url)  # the server's first run imports plotly and numpy
            print(f"median of {args.repeats} fresh sessions, ms from navigation start, 1280x720")
            print(f"{'figures':>8}{'fully drawn':>13}{'main thread':>13}")
            for n in args.figures:
                runs = [visit(browser, f"{url}/?figures={n}") for _ in range(args.repeats)]
                drawn = statistics.median(d for _, d, _ in runs)
                busy = statistics.median(b for _, _, b in runs)
                print(f"{n:>8}{drawn:>13.0f}{busy:>13.0f}")
            browser.close()


if __name__ == "__main__":
    main()
