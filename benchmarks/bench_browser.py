"""Time for a prepared link to be drawn in a real browser, per page (USERS.md walk 1 and 6).

    python benchmarks/bench_browser.py [gpt reversal ...] [--repeats 3] [--url http://127.0.0.1:8501]
                                       [--shots DIR] [--baseline DIR]

Starts `streamlit run app/Home.py` on a free loopback port (or uses --url), then for each
page opens its prepared deep link in a fresh headless Chromium context at 1280 x 720 (a new
Streamlit session each time, as a student opening the lecturer's link) and prints
- first map: when the first chart (app/static/charts.js, a canvas) inside the main area
  has drawn, from navigation start,
- fully drawn: the time of the last change to the page before it settled (the script run
  finished, every figure drawn, no skeletons, and nothing changed for 1.5 s),
- main thread: the page's main-thread work until settled (Chrome's TaskDuration: scripts,
  style, layout, paint), which, unlike the times above, hardly changes on a busy machine,
for the first visit (server caches cold: model loads, computations) and the median of the
--repeats later visits (server caches warm, browser session fresh).
--shots DIR saves a 1280 x 720 screenshot of each page once drawn, and a full-page one.
--baseline DIR serves another checkout too (`git worktree add DIR COMMIT`) and interleaves
its visits with this one's: on a shared box whose speed drifts by 2x within minutes, only
such paired figures compare two versions.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

#: page -> the deep link a lecturer prepares (path and query)
LINKS: dict[str, str] = {
    "home": "/",
    "gpt": "/gpt?checkpoint=gpt-sinusoidal&text=The%20with%20statement%20is%20used%20to&layer=1&head=2",
    "reversal": "/reversal?checkpoint=reverse-sinusoidal&text=attention",
    "basics": "/basics?heads=2",
    "positions": "/positions?d_model=64&length=50",
    "variance": "/variance?d_k=16",
    "train": "/train",
    "heads": "/heads?checkpoint=gpt-induction",
    "compare": "/compare?a=reverse-rope&b=reverse-none&text=attention",
}

# Runs in the page from the first script on: records when the first figure has drawn its
# plot and when the main area last changed.
PROBE = """
(() => {
  window.__probe = {firstMap: null, lastChange: performance.now()};
  const tick = () => {
    const main = document.querySelector('[data-testid="stMain"]');
    if (main && window.__probe.firstMap === null) {
      for (const host of main.querySelectorAll('[data-testid="stBidiComponentIsolated"]')) {
        const map = host.shadowRoot && host.shadowRoot.querySelector('.lab-chart[data-drawn]');
        if (map && window.__probe.firstMap === null) window.__probe.firstMap = performance.now();
      }
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  new MutationObserver(() => { window.__probe.lastChange = performance.now(); })
    .observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
})();
"""

SETTLED = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main || !main.querySelector('h1')) return false;
  const s = document.querySelector('[data-testid="stStatusWidget"]');
  const busy = s ? s.innerText.toLowerCase() : '';
  if (busy.includes('stop') || busy.includes('running')) return false;
  if (main.querySelector('[data-testid="stSkeleton"]')) return false;
  for (const host of main.querySelectorAll('[data-testid="stBidiComponentIsolated"]')) {
    if (!(host.shadowRoot && host.shadowRoot.querySelector('.lab-chart[data-drawn]'))) return false;
  }
  return performance.now() - window.__probe.lastChange > 1500;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(script: str | Path = "app/Home.py", root: Path = ROOT) -> Iterator[str]:
    """The real app (or another Streamlit script) of the checkout at `root` on a free
    loopback port, as tests/browser/conftest.py starts it."""
    port = _free_port()
    env = {**os.environ, "ATTENTION_LAB_DEVICE": os.environ.get("ATTENTION_LAB_DEVICE", "cpu")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            str(script),
            "--server.headless",
            "true",
            "--server.port",
            str(port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("streamlit did not start") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def visit(browser: Browser, url: str, shot: Path | None = None) -> tuple[float | None, float, float]:
    """(ms to the first drawn figure or None, ms to fully drawn, ms of main-thread work until
    settled) for one fresh session."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.add_init_script(PROBE)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(url)
        page.wait_for_function(SETTLED, timeout=120_000, polling=100)
        if page.locator('[data-testid="stException"]').count():
            raise RuntimeError(f"exception on {url}")
        first, last = page.evaluate("[window.__probe.firstMap, window.__probe.lastChange]")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        busy = metrics.get("TaskDuration", 0.0) * 1000
        if shot is not None:
            page.screenshot(path=str(shot))
            # the main area scrolls inside the window: grow the window to the content to see it all
            tall = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
            page.set_viewport_size({"width": 1280, "height": int(tall) + 100})
            page.wait_for_timeout(1500)
            page.screenshot(path=str(shot.with_name(shot.stem + "-full.png")))
        return first, last, busy
    finally:
        context.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", metavar="PAGE", help=f"any of {', '.join(LINKS)} (default: all)")
    parser.add_argument("--repeats", type=int, default=3, help="warm visits per page (median)")
    parser.add_argument("--url", default=None, help="use a running server instead of starting one")
    parser.add_argument("--shots", type=Path, default=None, help="folder for 1280x720 screenshots")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another checkout (git worktree add DIR COMMIT): its app served too, visits interleaved",
    )
    args = parser.parse_args()
    unknown = set(args.pages) - set(LINKS)
    if unknown:
        parser.error(f"unknown page(s) {sorted(unknown)}; known: {list(LINKS)}")
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)

    def fmt(ms: float | None) -> str:
        return "      -" if ms is None else f"{ms:7.0f}"

    with ExitStack() as stack, sync_playwright() as p:
        apps = {"": stack.enter_context(server() if args.url is None else _given(args.url))}
        if args.baseline is not None:
            apps[" (baseline)"] = stack.enter_context(server(root=args.baseline.resolve()))
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        print(
            "ms from navigation start, 1280x720, fresh browser session per visit; "
            f"warm = median of {args.repeats}"
            + (", this checkout's and the baseline's visits interleaved" if args.baseline else "")
        )
        print(
            f"{'page':<22}{'cold first map':>15}{'cold drawn':>11}{'warm first map':>15}{'warm drawn':>11}"
            f"{'warm main thread':>17}"
        )
        for name in args.pages or LINKS:
            try:
                cold = {label: visit(browser, url + LINKS[name]) for label, url in apps.items()}
                warm: dict[str, list[tuple[float | None, float, float]]] = {label: [] for label in apps}
                for i in range(args.repeats):
                    for label, url in apps.items():
                        shot = args.shots / f"{name}.png" if args.shots and i == 0 and not label else None
                        warm[label].append(visit(browser, url + LINKS[name], shot))
            except RuntimeError as e:
                print(f"/{name:<21} failed: {e}")
                continue
            for label in apps:
                firsts = [f for f, _, _ in warm[label] if f is not None]
                warm_first = statistics.median(firsts) if firsts else None
                warm_drawn = statistics.median(d for _, d, _ in warm[label])
                busy = statistics.median(b for _, _, b in warm[label])
                print(
                    f"{'/' + name + label:<22}{fmt(cold[label][0]):>15}{fmt(cold[label][1]):>11}"
                    f"{fmt(warm_first):>15}{fmt(warm_drawn):>11}{fmt(busy):>17}"
                )
        browser.close()


@contextmanager
def _given(url: str) -> Iterator[str]:
    yield url.rstrip("/")


if __name__ == "__main__":
    main()
