"""A class following its lecturer: how long after the lecturer's change each follower shows it.

    python benchmarks/bench_class.py --followers 10 --rounds 6 [--url http://127.0.0.1:8080]

Without --url it starts `deploy/serve.sh --workers 2` on a free port. A lecturer (one
Chromium context) starts a class session on /reversal and changes the text every --every
seconds; each follower is its own Chromium context that opened the follow link. For every
change it prints when each follower's text box showed the new text (p50 / p95 / max over
all followers and rounds), how many never did within --timeout, and exceptions shown on any
page. Every follower here is a whole browser tab on the same box, so the box itself limits
how many can be measured this way (about 10-20 on 2 cores); it is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402  (one set of browser flags)
from tests.support.serve import serving  # noqa: E402  (serve.sh started one way)

TEXT_BOX = 'input[aria-label^="Text to reverse"]'


def text_of(page: Page) -> str:
    try:
        return page.eval_on_selector(TEXT_BOX, "(el) => el.value", strict=False) or ""
    except Exception:  # a follower between two page runs has no text box for a moment
        return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between the lecturer's changes")
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--url", default=None, help="a running lab; default: start serve.sh --workers 2")
    args = parser.parse_args()
    with ExitStack() as stack, sync_playwright() as p:
        url = (
            args.url
            or stack.enter_context(serving(Path(stack.enter_context(tempfile.TemporaryDirectory())))).url
        )
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lecturer = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        lecturer.set_default_timeout(90_000)
        lecturer.goto(url + "/reversal?text=attention")
        lecturer.get_by_role("button", name="Start a class session").click()
        link = lecturer.locator('[data-testid="stSidebar"] code').first.inner_text(timeout=60_000).strip()
        followers = []
        for _ in range(args.followers):
            page = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
            page.goto(link)
            followers.append(page)
        time.sleep(5)
        delays: list[float] = []
        missed = 0
        for round_no in range(args.rounds):
            word = "".join("abcdefghij"[int(c)] for c in f"{round_no:03d}") + "class"
            box = lecturer.get_by_role("textbox", name=re.compile("Text to reverse"))
            box.fill(word)
            box.press("Enter")
            changed = time.monotonic()
            waiting = set(range(len(followers)))
            while waiting and time.monotonic() - changed < args.timeout:
                for i in list(waiting):
                    if text_of(followers[i]) == word:
                        delays.append(time.monotonic() - changed)
                        waiting.discard(i)
                time.sleep(0.05)
            missed += len(waiting)
            time.sleep(max(0.0, args.every - (time.monotonic() - changed)))
        shown_errors = sum(
            page.locator('[data-testid="stException"]').count() for page in [lecturer, *followers]
        )
        browser.close()
    delays.sort() if delays else delays.append(float("nan"))
    p50, p95 = statistics.median(delays), delays[int(0.95 * (len(delays) - 1))]
    print(f"{args.followers} followers x {args.rounds} changes: p50 {p50:.2f} s, p95 {p95:.2f} s, "
          f"max {delays[-1]:.2f} s; missed {missed}; exceptions shown {shown_errors}")  # fmt: skip


if __name__ == "__main__":
    main()
