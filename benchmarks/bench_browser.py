"""Time for a prepared link to be drawn in a real browser, per page (USERS.md walk 1 and 6).

    python benchmarks/bench_browser.py [gpt reversal ...] [--repeats 3] [--url http://127.0.0.1:8501]
                                       [--shots DIR] [--baseline DIR] [--floor]

Starts `streamlit run app/Home.py` on a free loopback port (or uses --url), then for each
page opens its prepared deep link in a fresh headless Chromium context at 1280 x 720 (a new
Streamlit session each time, as a student opening the lecturer's link) and prints
- title: when the page's title appeared (Streamlit's shell loaded, the script run begun),
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
--floor measures a bare Streamlit page instead (benchmarks/browser_floor.py): a title and one
map, alone or under one or more widgets. It is the floor under every page on this machine:
each kind of widget on a page holds its first map back by the time its lazily loaded code
takes to arrive and run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

from attention_lab.frame.streamlit_dom import inline, part
from attention_lab.testing.chromium import CHROMIUM, CHROMIUM_ARGS
from attention_lab.testing.servers import ROOT, running_app

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

#: --floor: a bare Streamlit page (benchmarks/browser_floor.py) with one map and these elements
FLOOR_LINKS: dict[str, str] = {
    "title + map": "/",
    "+ caption": "/?with=caption",
    "+ toggle": "/?with=toggle",
    "+ selectbox": "/?with=selectbox",
    "+ text input": "/?with=text_input",
    "+ number input": "/?with=number_input",
    "+ slider": "/?with=slider",
    "+ selectbox, text input, toggle": "/?with=selectbox,text_input,toggle",
}

# Runs in the page from the first script on: records when the page's title appeared, when
# the first figure has drawn its plot and when the main area last changed.
PROBE = inline("""
(() => {
  window.__probe = {title: null, firstMap: null, lastChange: performance.now()};
  const tick = () => {
    const main = document.querySelector(part("main"));
    if (main && window.__probe.title === null && main.querySelector('h1')) {
      window.__probe.title = performance.now();
    }
    if (main && window.__probe.firstMap === null) {
      for (const host of main.querySelectorAll(part("component"))) {
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
""")

SETTLED = inline("""() => {
  const main = document.querySelector(part("main"));
  if (!main || !main.querySelector('h1')) return false;
  const s = document.querySelector(part("status"));
  const busy = s ? s.innerText.toLowerCase() : '';
  if (busy.includes('stop') || busy.includes('running')) return false;
  if (main.querySelector(part("skeleton"))) return false;
  for (const host of main.querySelectorAll(part("component"))) {
    if (!(host.shadowRoot && host.shadowRoot.querySelector('.lab-chart[data-drawn]'))) return false;
  }
  return performance.now() - window.__probe.lastChange > 1500;
}""")


@contextmanager
def server(script: str | Path = "app/Home.py", root: Path = ROOT, python_path: str = "") -> Iterator[str]:
    """The real app (or another Streamlit script) of the checkout at `root` on a free
    loopback port, started as the browser tests start it (its own packages imported)."""
    device = {"ATTENTION_LAB_DEVICE": os.environ.get("ATTENTION_LAB_DEVICE", "cpu")}
    with tempfile.TemporaryDirectory() as folder:
        with running_app(Path(folder), device, root=root, script=script, python_path=python_path) as url:
            yield url


@dataclass(frozen=True)
class Visit:
    """One fresh session's figures, in ms from navigation start (None: nothing of the kind)."""

    title: float | None  # the page's title shown: Streamlit's shell, the script run, the first elements
    first_map: float | None  # the first chart drawn
    drawn: float  # the last change before the page settled
    busy: float  # main-thread work until settled


def visit(browser: Browser, url: str, shot: Path | None = None) -> Visit:
    """Open `url` in a fresh browser context (a new Streamlit session) and wait until drawn."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = context.new_page()
        page.add_init_script(PROBE)
        cdp = context.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(url)
        page.wait_for_function(SETTLED, timeout=120_000, polling=100)
        if page.locator(part("exception")).count():
            raise RuntimeError(f"exception on {url}")
        probe = "[window.__probe.title, window.__probe.firstMap, window.__probe.lastChange]"
        title, first, last = page.evaluate(probe)
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        busy = metrics.get("TaskDuration", 0.0) * 1000
        if shot is not None:
            page.screenshot(path=str(shot))
            # the main area scrolls inside the window: grow the window to the content to see it all
            tall = page.evaluate(inline('document.querySelector(part("main")).scrollHeight'))
            page.set_viewport_size({"width": 1280, "height": int(tall) + 100})
            page.wait_for_timeout(1500)
            page.screenshot(path=str(shot.with_name(shot.stem + "-full.png")))
        return Visit(title, first, last, busy)
    finally:
        context.close()


def median(values: list[float | None]) -> float | None:
    """The median of the known values (None where there were none)."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


@contextmanager
def floor_server() -> Iterator[str]:
    """benchmarks/browser_floor.py served as Streamlit serves a page: a copy next to a copy of
    app/static (Streamlit serves the static folder beside the main script), app/ importable."""
    with tempfile.TemporaryDirectory(prefix="attention-lab-floor-") as folder:
        shutil.copytree(ROOT / "app" / "static", Path(folder) / "static")
        script = Path(shutil.copy(ROOT / "benchmarks" / "browser_floor.py", folder))
        with server(script, python_path=str(ROOT / "app")) as url:
            yield url


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
    parser.add_argument(
        "--floor",
        action="store_true",
        help="instead of the lab's pages, a bare Streamlit page with one map and one or more widgets",
    )
    args = parser.parse_args()
    if args.floor and (args.url or args.baseline):
        parser.error("--floor serves its own page: it takes neither --url nor --baseline")
    links = FLOOR_LINKS if args.floor else LINKS
    unknown = set(args.pages) - set(links)
    if unknown:
        parser.error(f"unknown page(s) {sorted(unknown)}; known: {list(links)}")
    if args.shots:
        args.shots.mkdir(parents=True, exist_ok=True)

    def fmt(ms: float | None) -> str:
        return "      -" if ms is None else f"{ms:7.0f}"

    with ExitStack() as stack, sync_playwright() as p:
        if args.floor:
            apps = {"": stack.enter_context(floor_server())}
        else:
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
            f"{'page':<34}{'cold first map':>15}{'cold drawn':>11}{'warm title':>11}{'warm first map':>15}"
            f"{'warm drawn':>11}{'warm main thread':>17}"
        )
        for name in args.pages or links:
            try:
                cold = {label: visit(browser, url + links[name]) for label, url in apps.items()}
                warm: dict[str, list[Visit]] = {label: [] for label in apps}
                for i in range(args.repeats):
                    for label, url in apps.items():
                        shot = args.shots / f"{name}.png" if args.shots and i == 0 and not label else None
                        warm[label].append(visit(browser, url + links[name], shot))
            except RuntimeError as e:
                print(f"{name:<34} failed: {e}")
                continue
            for label in apps:
                visits = warm[label]
                print(
                    f"{('' if args.floor else '/') + name + label:<34}{fmt(cold[label].first_map):>15}"
                    f"{fmt(cold[label].drawn):>11}{fmt(median([one.title for one in visits])):>11}"
                    f"{fmt(median([one.first_map for one in visits])):>15}"
                    f"{fmt(median([one.drawn for one in visits])):>11}"
                    f"{fmt(median([one.busy for one in visits])):>17}"
                )
        browser.close()


@contextmanager
def _given(url: str) -> Iterator[str]:
    yield url.rstrip("/")


if __name__ == "__main__":
    main()
