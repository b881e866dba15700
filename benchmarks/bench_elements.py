"""What Streamlit itself costs a page run: the server CPU of opening a page of N plain elements.

    python benchmarks/bench_elements.py                       # 1, 100 and 200 of each kind, 60 opens each
    python benchmarks/bench_elements.py --counts 1,150 --opens 100 --kinds markdown
    python benchmarks/bench_elements.py --nagle               # the socket as Streamlit binds it

A page of the lab spends much of its run in Streamlit's work per element (building, queueing and
sending each one as its own websocket message). This serves a script with nothing but N elements
of one kind through the lab's app process (`streamlit_command`: its config flags and the
adapter's server changes; no collection after each run, as the lab's config) and opens it as a
new tab does (a new session; GET, websocket, rerun, read to script_finished), one open at a time.
Printed per kind and N: the app process's CPU per open (from /proc) and the p50 of the open's
wall time. The difference between N and 1 divided by N - 1 is what one more element costs the
server. Kinds: markdown (a paragraph), columns (st.columns(2) with a caption in the first: four
deltas), slider (a keyed widget).
--nagle skips `send_without_delay` (Nagle's algorithm left on, as Streamlit binds), to see what
TCP_NODELAY costs or saves.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import textwrap
from pathlib import Path

from attention_lab.testing.protocol import Browser, open_page
from attention_lab.testing.servers import cpu_seconds, free_port, launched, streamlit_command, wait_healthy

KINDS = ("markdown", "columns", "slider")
SCRIPT = textwrap.dedent(
    """
    import streamlit as st

    n, kind = int(st.query_params.get("n", "1")), st.query_params.get("kind", "markdown")
    for i in range(n):
        if kind == "markdown":
            st.markdown(f"Paragraph {i} of a lesson, a sentence or two long, as the pages write them.")
        elif kind == "columns":
            st.columns(2)[0].caption(f"left {i}")
        else:
            st.slider(f"value {i}", 0, 10, 5, key=f"s{i}")
    """
)
LAB_RUNNER = ["--runner.postScriptGC", "false"]  # as the lab's .streamlit/config.toml
#: the lab's app process with the adapter's send_without_delay skipped (--nagle)
NAGLE = (
    "from attention_lab.frame import streamlit_private\n"
    "streamlit_private.send_without_delay = lambda: False\n"
)


async def opens(base: str, link: str, count: int) -> list[float]:
    """Wall seconds of `count` opens of `link`, one after another."""
    walls = []
    for _ in range(count):
        result = await open_page(Browser(base), link, 60)
        if result.exceptions:
            raise SystemExit(f"{link}: {result.exceptions}")
        walls.append(result.seconds)
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1,100,200", help="elements per page, comma-separated")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"any of {', '.join(KINDS)}")
    parser.add_argument("--opens", type=int, default=60, help="measured opens per page (after 10 to warm up)")
    parser.add_argument("--nagle", action="store_true", help="leave Nagle's algorithm on, as Streamlit binds")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    kinds = args.kinds.split(",")
    if unknown := set(kinds) - set(KINDS):
        parser.error(f"unknown kind(s) {sorted(unknown)}; known: {', '.join(KINDS)}")
    with tempfile.TemporaryDirectory() as folder:
        script, log, env = Path(folder) / "page.py", Path(folder) / "server.log", dict(os.environ)
        script.write_text(SCRIPT)
        if args.nagle:
            (Path(folder) / "sitecustomize.py").write_text(NAGLE)
            env["PYTHONPATH"] = os.pathsep.join(p for p in (folder, env.get("PYTHONPATH")) if p)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        command = streamlit_command(script, port, LAB_RUNNER)
        with launched(command, log, env, cwd=Path(folder)) as proc:
            wait_healthy(base, proc, log)
            print(f"{sys.platform}, Nagle {'on' if args.nagle else 'off'}; {args.opens} opens per page")
            print(f"{'kind':<10}{'elements':>9}{'CPU ms/open':>13}{'p50 ms':>9}")
            for kind in kinds:
                for n in counts:
                    link = f"/?n={n}&kind={kind}"
                    asyncio.run(opens(base, link, 10))
                    cpu = cpu_seconds(proc.pid)
                    walls = asyncio.run(opens(base, link, args.opens))
                    cpu = (cpu_seconds(proc.pid) - cpu) / args.opens
                    print(f"{kind:<10}{n:>9}{cpu * 1000:>13.1f}{statistics.median(walls) * 1000:>9.1f}")


if __name__ == "__main__":
    main()
