"""Server-side cost of a deep-link run of the explorer pages and the router, through AppTest.

    python benchmarks/bench_explorer.py [home gpt reversal] [--repeats 7] [--profile PAGE]

For each page (default: all three) it opens the router (app/Home.py) with the page's
prepared deep link (a 64-character prompt on /gpt) and prints
- cold: the first run with st.cache_data and st.cache_resource cleared (model load, trace,
  sampling, every figure),
- fresh session: the first run of a new session when the server's caches are warm (what a
  student opening the lecturer's link costs),
- warm: the median of --repeats reruns of the unchanged view (any click that leaves the
  view's inputs alone),
each as wall-clock ms and process CPU ms (the script thread's work plus AppTest's own
polling, a few ms; the scripts compiled once, as the server does), and the figure payload:
bytes of every plotly spec sent, the largest figure's bytes and the count.
--profile PAGE prints the top of a cProfile of one warm run.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import logging
import os
import pstats
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import streamlit as st
import streamlit.testing.v1.app_test as app_test
import torch
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.local_script_runner import LocalScriptRunner

for _name in list(logging.root.manager.loggerDict):
    if _name.startswith("streamlit"):  # "no runtime found" warnings are expected outside a server
        logging.getLogger(_name).setLevel(logging.ERROR)

# AppTest compiles the page scripts (and rewrites them for st magic) on every run; the server
# keeps one ScriptCache for its lifetime. Share one, so a run costs what it costs there.
_SCRIPTS = ScriptCache()
app_test.ScriptCache = lambda: _SCRIPTS  # type: ignore[assignment,misc]

ROOT = Path(__file__).resolve().parents[1]
HOME = str(ROOT / "app" / "Home.py")
PROMPT = "The with statement is used to wrap the execution of a block with"  # 64 characters
assert len(PROMPT) == 64

#: page (app/views/<name>.py) -> its prepared deep link's query parameters
PAGES: dict[str, dict[str, str]] = {
    "home": {},
    "gpt": {"checkpoint": "gpt-sinusoidal", "text": PROMPT, "layer": "1", "head": "2", "max_new": "80"},
    "reversal": {"checkpoint": "reverse-sinusoidal", "text": "attention"},
}


def open_page(name: str, params: dict[str, str]) -> AppTest:
    """An AppTest on the router with the link's query params, switched to the page, not yet run."""
    at = AppTest.from_file(HOME, default_timeout=300)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
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
    cold = timed_run(open_page(name, params))
    fresh = [timed_run(open_page(name, params)) for _ in range(3)]
    at = open_page(name, params)
    at.run()
    warm = [timed_run(at) for _ in range(repeats)]
    sizes = [len(c.proto.spec.encode()) for c in at.get("plotly_chart")]
    return {
        "cold_wall": cold[0],
        "cold_cpu": cold[1],
        "fresh_wall": statistics.median(w for w, _ in fresh),
        "fresh_cpu": statistics.median(c for _, c in fresh),
        "warm_wall": statistics.median(w for w, _ in warm),
        "warm_cpu": statistics.median(c for _, c in warm),
        "bytes": sum(sizes),
        "largest": max(sizes, default=0),
        "figures": len(sizes),
    }


def profile(name: str, params: dict[str, str], top: int = 40) -> str:
    """cProfile of one warm run of the page, taken inside the script thread."""
    at = open_page(name, params)
    at.run()
    prof = cProfile.Profile()
    original: Callable[[LocalScriptRunner], None] = LocalScriptRunner._run_script_thread

    def profiled(self: LocalScriptRunner) -> None:
        prof.enable()
        try:
            original(self)
        finally:
            prof.disable()

    LocalScriptRunner._run_script_thread = profiled  # type: ignore[method-assign]
    try:
        at.run()
    finally:
        LocalScriptRunner._run_script_thread = original  # type: ignore[method-assign]
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
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); ms wall / ms CPU; "
        f"fresh = median of 3 new sessions, warm = median of {args.repeats} reruns"
    )
    print(
        f"{'page':<11}{'cold':>13}{'fresh session':>15}{'warm':>13}{'figures':>9}{'bytes':>10}{'largest':>10}"
    )
    for name in args.pages or PAGES:
        m = measure(name, PAGES[name], args.repeats)
        print(
            f"/{name:<10}{m['cold_wall']:>6.0f} /{m['cold_cpu']:>5.0f}"
            f"{m['fresh_wall']:>8.0f} /{m['fresh_cpu']:>5.0f}{m['warm_wall']:>6.0f} /{m['warm_cpu']:>5.0f}"
            f"{m['figures']:>9}{m['bytes']:>10,}{m['largest']:>10,}"
        )


if __name__ == "__main__":
    main()
