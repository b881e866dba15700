"""What Streamlit's component call costs for a page's chart specs sent as a dict or as JSON bytes.

    python benchmarks/bench_chart_specs.py [PAGE ...] [--repeats 30]   # PAGE: gpt, reversal, ...

For each page (default: the exploring mix's five) it opens the page's deep link from
bench_pages.PAGES in AppTest, takes the specs its charts sent, and mounts them all, in one
script run, through a bare v2 component: once as the dict (Streamlit scans its fields for
dataframes, encodes it, and encodes it again key-sorted to hash it) and once as
`attention_lab.charts.component.spec_bytes` (encoded by us, passed on as it is). It prints the
median over --repeats of each, per page run, in ms of the script thread's wall time.
"""

from __future__ import annotations

import argparse
import json
import os

from bench_pages import PAGES, open_page
from streamlit.testing.v1 import AppTest

from attention_lab.testing.apptest import quiet_streamlit

MIX = ("gpt", "reversal", "basics", "positions", "variance")


def mount_both(specs: list[dict], repeats: int) -> None:
    """The AppTest script: mounts `specs` `repeats` times each way, the medians to session state."""
    import time

    import streamlit as st

    from attention_lab.charts.component import spec_bytes

    bare = st.components.v2.component("bench.spec", js="export default function () {}")
    times: dict[str, list[float]] = {"dict": [], "bytes": []}
    for round_ in range(repeats):
        for way in ("dict", "bytes"):
            start = time.perf_counter()
            for k, spec in enumerate(specs):
                bare(key=f"{way}{round_}_{k}", data=spec if way == "dict" else spec_bytes(spec))
            times[way].append((time.perf_counter() - start) * 1000)
    st.session_state["medians"] = {way: sorted(ms)[len(ms) // 2] for way, ms in times.items()}


def page_specs(name: str) -> list[dict]:
    """The specs the page's canvas charts sent on its deep link's first run."""
    at = open_page(name, PAGES[name])
    at.run()
    if at.exception:
        raise SystemExit(f"{name} failed: {at.exception[0].value}")
    return [
        json.loads(c.proto.bytes or c.proto.json)
        for c in at.get("bidi_component")
        if c.proto.component_name == "attention_lab.chart"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", metavar="PAGE", help=f"default: {' '.join(MIX)}")
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    os.environ.setdefault("ATTENTION_LAB_DEVICE", "cpu")
    print("page       charts  JSON kB  as dict ms  as bytes ms")
    for name in args.pages or MIX:
        specs = page_specs(name)
        at = AppTest.from_function(mount_both, args=(specs, args.repeats), default_timeout=300)
        quiet_streamlit()
        at.run()
        medians = at.session_state["medians"]
        size = sum(len(json.dumps(spec)) for spec in specs) / 1000
        print(f"{name:<10} {len(specs):>6} {size:>8.1f} {medians['dict']:>11.2f} {medians['bytes']:>12.2f}")


if __name__ == "__main__":
    main()
