"""Server-side cost of a deep-link page run, per page, through Streamlit's AppTest.

    python benchmarks/bench_pages.py [PAGE ...] [--repeats 7] [--profile PAGE]   # PAGE: gpt, heads, ...

For each page named (default: every page in PAGES) it opens the router (app/Home.py) with
the page's deep-link query parameters and prints
- cold: the first run of the page with st.cache_data and st.cache_resource cleared
  (model loads and every computation included),
- fresh: the first run of a new session while the caches are warm (what a student opening
  the lecturer's link costs), median of 3,
- warm: the median of --repeats reruns of the unchanged view (any click that leaves this
  part of the page alone),
  each as process CPU ms (the script thread's work plus AppTest's own polling, a few ms),
- the figure payload: bytes of every chart the page sends (the canvas charts' whole element:
  spec, and the loader of app/static/charts.js), the largest one, the count.
A server compiles each page script once; AppTest compiles it again on every run (20-45 ms
that no user pays), so the runs here share one compiled-script cache, as a server does.
--profile PAGE prints the top of a cProfile of one warm run of that page.

Add a page by adding its name (app/views/<name>.py) and deep-link parameters to PAGES.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import streamlit as st
import torch
from streamlit.testing.v1 import AppTest

from attention_lab.frame.streamlit_private import around_apptest_runs
from attention_lab.testing.apptest import quiet_streamlit, share_script_cache

SCRIPTS = share_script_cache()  # one compile per page, as a server


ROOT = Path(__file__).resolve().parents[1]
HOME = str(ROOT / "app" / "Home.py")
PROMPT = "The with statement is used to wrap the execution of a block with"  # 64 characters

#: page name -> the deep link a lecturer prepares (USERS.md, walk 1)
PAGES: dict[str, dict[str, str]] = {
    "home": {},
    "gpt": {"checkpoint": "gpt-sinusoidal", "text": PROMPT, "layer": "1", "head": "2", "max_new": "80"},
    "reversal": {"text": "attention"},
    "basics": {"heads": "2"},
    "positions": {"d_model": "64", "length": "50"},
    "variance": {"d_k": "16"},
    "cost": {"T": "2048", "window": "256"},
    "train": {},
    "heads": {"checkpoint": "gpt-induction"},
    "compare": {"a": "reverse-rope", "b": "reverse-none", "text": "attention"},
    "bert": {"text": "The ret[MASK]rn statement leaves the f[MASK]nction.", "layer": "1", "head": "2"},
}


def open_page(name: str, params: dict[str, str]) -> AppTest:
    """An AppTest on the router, switched to app/views/<name>.py with the query params set,
    before its first run of that page."""
    at = AppTest.from_file(HOME, default_timeout=300)
    quiet_streamlit()
    at.run()  # the router's first page (home), then the link: home drops parameters it does not read
    quiet_streamlit()
    for key, value in params.items():
        at.query_params[key] = value
    at.switch_page(f"views/{name}.py")
    return at


def timed_run(at: AppTest) -> tuple[float, float]:
    """(wall ms, process CPU ms) of one run; raises if the page shows an exception."""
    wall, cpu = time.perf_counter(), time.process_time()
    at.run()
    wall, cpu = (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000
    if at.exception:
        raise SystemExit(f"page failed: {at.exception[0].value}")
    return wall, cpu


def measure(name: str, params: dict[str, str], repeats: int) -> dict[str, float]:
    st.cache_data.clear()
    st.cache_resource.clear()
    SCRIPTS.clear()
    quiet_streamlit()
    _, cold_cpu = timed_run(open_page(name, params))
    fresh = [timed_run(open_page(name, params))[1] for _ in range(3)]
    at = open_page(name, params)
    at.run()
    warm = [timed_run(at)[1] for _ in range(repeats)]
    sizes = [c.proto.ByteSize() for c in at.get("bidi_component")]  # canvas charts: spec + loader
    return {
        "cold_cpu": cold_cpu,
        "fresh_cpu": statistics.median(fresh),
        "warm_cpu": statistics.median(warm),
        "bytes": sum(sizes),
        "largest": max(sizes, default=0),
        "figures": len(sizes),
    }


def profile(name: str, params: dict[str, str], top: int = 35) -> str:
    """cProfile of one warm run of the page, taken inside the script thread."""
    at = open_page(name, params)
    at.run()
    prof = cProfile.Profile()

    def profiled(run: Callable[[], None]) -> None:
        prof.enable()
        try:
            run()
        finally:
            prof.disable()

    with around_apptest_runs(profiled):
        at.run()
    if at.exception:
        raise SystemExit(f"page failed: {at.exception[0].value}")
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", metavar="PAGE", help=f"any of {', '.join(PAGES)} (default: all)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--profile", choices=list(PAGES), default=None)
    args = parser.parse_args()
    unknown = set(args.pages) - set(PAGES)
    if unknown:
        parser.error(f"unknown page(s) {sorted(unknown)}; known: {list(PAGES)}")
    os.environ.setdefault("ATTENTION_LAB_DEVICE", "cpu")
    torch.set_num_threads(1)
    if args.profile:
        print(profile(args.profile, PAGES[args.profile]))
        return
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); CPU ms; "
        f"warm = median of {args.repeats}"
    )
    print(f"{'page':<11}{'cold':>7}{'fresh':>7}{'warm':>7}{'figures':>9}{'bytes':>10}{'largest':>10}")
    for name in args.pages or PAGES:
        m = measure(name, PAGES[name], args.repeats)
        print(
            f"/{name:<10}{m['cold_cpu']:>7.0f}{m['fresh_cpu']:>7.0f}{m['warm_cpu']:>7.0f}"
            f"{m['figures']:>9}{m['bytes']:>10,}{m['largest']:>10,}"
        )


if __name__ == "__main__":
    main()
