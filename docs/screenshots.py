"""Renew the guides' screenshots from the real app: `python docs/screenshots.py`.

Starts the app from this checkout (`streamlit run app/Home.py` on a free loopback port, on
CPU, its runs in a temporary folder), opens each shot's link in headless Chromium (Debian's
/usr/bin/chromium through Playwright, the flags the browser tests use) at its width and in
its colour scheme, waits until the page has run and its charts are drawn, and writes
docs/screenshots/<name>.png. `--only NAME ...` renews some; `--out DIR` writes elsewhere.
Needs the `test` extra (Playwright) and Chromium (`apt-get install -y chromium`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "screenshots"
PHONE, PROJECTOR = (390, 844), (1280, 720)


@dataclass(frozen=True)
class Shot:
    name: str
    link: str
    size: tuple[int, int]
    scheme: str  # "light" or "dark"
    what: str
    scroll: str = ""  # a CSS selector scrolled to the top of the screen before the shot
    element: str = ""  # a CSS selector: shoot only that element (else the screen)


SHOTS = (
    Shot("teach-projector", "/reversal?text=attention&present=1", PROJECTOR, "light", "projector mode"),
    Shot(
        "teach-class-session",
        "/reversal?text=attention",
        (1280, 1000),
        "light",
        "a class session's sidebar",
        element='[data-testid="stSidebar"]',
    ),
    Shot("teach-phone-follow", "?follow=", PHONE, "dark", "a follower's phone (the session above)"),
    Shot(
        "teach-tour",
        "/?tour=seed-chapters&scene=4&present=1",
        PROJECTOR,
        "light",
        "a tour's scene, projected",
    ),
    Shot("learn-positions-dark", "/positions?d_model=64&length=50", PROJECTOR, "dark", "/positions, dark"),
    Shot("learn-variance-phone", "/variance?d_k=256", PHONE, "light", "/variance on a phone", ".lab-chart"),
)

IDLE = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    if (!main || !main.querySelector('h1, [data-testid="stHeading"]')) return false;
    const s = document.querySelector('[data-testid="stStatusWidget"]');
    return !s || !/stop|running/i.test(s.innerText);
}"""


def settle(page, timeout: float = 120_000) -> None:
    """Wait until the script run is over (twice: a rerun may follow) and every chart is drawn."""
    for _ in range(2):
        page.wait_for_function(IDLE, timeout=timeout)
        page.wait_for_timeout(800)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lab-chart')].every(c => c.hasAttribute('data-drawn'))",
        timeout=timeout,
    )
    if page.locator('[data-testid="stException"]').count():
        raise RuntimeError(f"{page.url}: the page shows an exception")
    page.wait_for_timeout(500)


def start_class_session(page) -> str:
    """Click the sidebar's button; the follow link it shows."""
    page.get_by_role("button", name="Start a class session").click()
    code = page.locator('[data-testid="stSidebar"] code').filter(has_text="?follow=")
    code.first.wait_for(timeout=60_000)
    settle(page)
    return code.first.inner_text().strip()


def take(browser, base: str, shot: Shot, out: Path, follow_link: str | None) -> str | None:
    """Take one shot; returns the follow link when this shot started a class session."""
    context = browser.new_context(
        viewport={"width": shot.size[0], "height": shot.size[1]}, color_scheme=shot.scheme
    )
    page = context.new_page()
    started = None
    link = follow_link if shot.link == "?follow=" else base + shot.link
    if link is None:
        raise RuntimeError(f"{shot.name}: needs the class session of teach-class-session")
    page.goto(link)
    settle(page)
    if shot.name == "teach-class-session":
        started = start_class_session(page)
        keep_open.append(context)  # the lecturer stays: followers need a live session
    if shot.scroll:
        page.locator(shot.scroll).first.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
    target = page.locator(shot.element).first if shot.element else page
    target.screenshot(path=str(out / f"{shot.name}.png"))
    print(f"{out / (shot.name + '.png')}: {shot.what}, {shot.size[0]}x{shot.size[1]} {shot.scheme}")
    if started is None:
        context.close()
    return started


keep_open: list = []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"folder for the PNGs (default {OUT})")
    parser.add_argument("--only", nargs="*", default=[], metavar="NAME", choices=[s.name for s in SHOTS])
    args = parser.parse_args(argv)
    wanted = [s for s in SHOTS if not args.only or s.name in args.only or s.name == "teach-class-session"
              and "teach-phone-follow" in args.only]  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    from attention_lab.testing.chromium import CHROMIUM, CHROMIUM_ARGS
    from attention_lab.testing.servers import running_app

    with tempfile.TemporaryDirectory() as tmp, running_app(Path(tmp)) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        follow: str | None = None
        for shot in wanted:
            follow = take(browser, base, shot, args.out, follow) or follow
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
