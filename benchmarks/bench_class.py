"""A class following its lecturer: how long after the lecturer's change each follower shows it.

    python benchmarks/bench_class.py --followers 50,100,200 --minutes 5     # the issue's table
    python benchmarks/bench_class.py --followers 20 --minutes 1 --others 5
    python benchmarks/bench_class.py --browsers 10 --rounds 6               # real Chromium tabs

It starts `deploy/serve.sh --workers 2` on a free port (or measures --url). The lecturer
opens /reversal, presses "Start a class session", reads the follow link from the sidebar
and changes the text every --every seconds. Each follower opens the follow link.

Followers (default) speak Streamlit's own protocol, as benchmarks/bench_load.py's users do:
GET the link (nginx sets the route cookie: followers spread over the app processes), open
the websocket, run the page, then take the page runs the server starts when the lecturer's
view moves (attention_lab.lecture.push) and answer the page's own (rare) poll at its interval, keeping
the URL and page the server sets - what an open tab does, without drawing. A follower's
delay is from the lecturer sending the change to the first page run that shows the new text
in the text box. --others users (bench_load's closed loop over its deep links) open pages
for --baseline seconds without the class right before each level, then all through it, in a
process of their own (as their own browsers are); their page p95 is reported without the
class and with it. Memory
is the server's resident set (app processes + nginx) before the class, once it joined (its
sessions) and at the end of each level (flat: nothing kept per change); exceptions are
Exception elements on any run; errors are closed websockets and runs that did not finish
within --timeout. "idle" is the server's CPU
(cores busy) while the class follows and the lecturer changes nothing: the polls' cost.
"srv/ch" is the server's CPU seconds per change (with --others, their pages too) and "me/ch"
the followers' (this process reading every message, on the same cores: a class's browsers
would not be).

With --browsers N, each follower is a whole Chromium tab instead (the same delay, read from
the drawn page); the box itself limits how many tabs can be measured that way.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import re
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from bench_load import StepResult, load_step, pct, started

from attention_lab.frame.streamlit_dom import part
from attention_lab.testing.chromium import CHROMIUM, CHROMIUM_ARGS
from attention_lab.testing.protocol import ROUTE, Browser, read_run, rerun_msg
from attention_lab.testing.servers import Server
from attention_lab.testing.tabs import TEXT_LABEL, Follower, Tab, text_change, warm_up

START = "/reversal?text=attention"


def word_for(round_no: int) -> str:
    """A new text the reversal page accepts (letters a-z), one per change."""
    return "".join("abcdefghij"[int(c)] for c in f"{round_no:04d}") + "class"


# ---------------------------------------------------------------- the class over the protocol


@dataclass
class Level:
    """One class size's figures: delays, misses, others' page times, memory and CPU."""

    followers: int
    delays: list[float] = field(default_factory=list)
    missed: int = 0
    changes: int = 0
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rss: tuple[float, float, float] = (float("nan"),) * 3  # server MB: before the class, joined, end
    others: list[float] = field(default_factory=list)
    count_shown: str = ""
    idle_cpu: float = float("nan")  # server CPU seconds per second while nothing changes
    server_per_change: float = float("nan")  # server CPU seconds per change (others' pages too)
    bench_per_change: float = float("nan")  # this process's CPU seconds per change (the followers)


async def class_level(server: Server, n: int, args: argparse.Namespace, first_round: int) -> Level:
    """One lecturer and n followers for --minutes; --others users open pages meanwhile."""
    level, timeout = Level(n), args.timeout
    lecturer = Tab(Browser(server.base, cookies={ROUTE: f"lecturer-{n}"}), START)
    await lecturer.browser.get(START, timeout)
    async with lecturer.browser.connect() as ws:
        await ws.send(rerun_msg(START))
        page = lecturer.note(await read_run(ws, timeout))
        await ws.send(rerun_msg(lecturer.link, [page.buttons["Start a class session"][:1] + (True,)],
                                page_hash=lecturer.page_hash))  # fmt: skip
        page = lecturer.note(await read_run(ws, timeout))
        link = next(c.strip() for c in page.codes if "?follow=" in c)
        box_id = next(i for label, (i, _) in page.text_inputs.items() if label.startswith(TEXT_LABEL))
        level.rss = (server.rss_mb(), *level.rss[1:])
        followers = [Follower(Tab(Browser(server.base), "/" + link.split("/", 3)[3])) for _ in range(n)]
        tasks, readies = [], []
        for follower in followers:  # the class arrives over a few seconds, not in one instant
            readies.append(asyncio.Event())
            tasks.append(asyncio.create_task(follower.follow(readies[-1], timeout)))
            await asyncio.sleep(args.arrive / n)
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), timeout * 2)
        await asyncio.sleep(3)
        level.rss = (level.rss[0], server.rss_mb(), level.rss[2])  # flat from here: nothing kept per change
        idle_cpu = server.cpu_seconds()
        await asyncio.sleep(5)  # the class following, the lecturer still: what the polls cost
        level.idle_cpu = (server.cpu_seconds() - idle_cpu) / 5
        others = asyncio.create_task(other_users(server.base, args.others, args.minutes * 60, timeout))
        await asyncio.sleep(args.every)
        stop_at = time.monotonic() + args.minutes * 60
        round_no = first_round
        server_before, bench_before = server.cpu_seconds(), time.process_time()
        while time.monotonic() < stop_at:
            word = word_for(round_no)
            changed = time.monotonic()
            await ws.send(text_change(lecturer, box_id, word))
            outcome = lecturer.note(await read_run(ws, timeout))
            level.exceptions.extend(f"lecturer: {e}" for e in outcome.exceptions)
            await asyncio.sleep(max(0.0, args.every - (time.monotonic() - changed)))
            for follower in followers:
                when = follower.seen.get(word)
                if when is None or when - changed > args.every:
                    level.missed += 1
                else:
                    level.delays.append(when - changed)
            level.changes += 1
            round_no += 1
        level.server_per_change = (server.cpu_seconds() - server_before) / max(level.changes, 1)
        level.bench_per_change = (time.process_time() - bench_before) / max(level.changes, 1)
        counts = [r for fid, r in page.auto_reruns.items() if r > 1]
        if counts:  # the lecturer's follower count, as the sidebar shows it
            fid = next(fid for fid, r in page.auto_reruns.items() if r > 1)
            await ws.send(rerun_msg(lecturer.link, fragment_id=fid, auto=True, page_hash=lecturer.page_hash))
            shown = await read_run(ws, timeout, fragment=True)
            level.count_shown = next((t for t in shown.texts if "following" in t), "")
        level.rss = (*level.rss[:2], server.rss_mb())
        for follower, task in zip(followers, tasks, strict=True):
            follower.leaving = True
            task.cancel()
        await asyncio.wait(tasks, timeout=timeout + 5)
        other = await others
        level.others = other.times
        level.errors.extend(other.errors)
        level.exceptions.extend(other.exceptions)
        for follower in followers:
            level.exceptions.extend(follower.exceptions)
            level.errors.extend(follower.errors)
    return level


def _other_users_process(base: str, users: int, seconds: float, timeout: float) -> StepResult:
    return asyncio.run(load_step(base, users, seconds, 10**9, timeout, None))


async def other_users(base: str, users: int, seconds: float, timeout: float) -> StepResult:
    """bench_load's closed loop of `users` for `seconds`, in a process of its own: other users
    have their own browsers, and a class's pushed messages read in this process's loop would
    otherwise hold their pages' timing up (it did: others' p95 +148% at 200 followers)."""
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        return await asyncio.get_running_loop().run_in_executor(
            pool, _other_users_process, base, users, seconds, timeout
        )


def report(level: Level, baseline: list[float]) -> str:
    """One level's line of the table (HEADER)."""
    d = sorted(level.delays) or [float("nan")]
    p95_others, p95_alone = pct(level.others, 0.95), pct(baseline, 0.95)
    change = (p95_others / p95_alone - 1) * 100 if baseline and level.others else float("nan")
    count = re.sub(r"\*", "", level.count_shown.split("·")[0]).strip() or "-"
    return (
        f"{level.followers:>9} {level.changes:>7} {statistics.median(d):>6.2f} {pct(d, 0.95):>6.2f} "
        f"{d[-1]:>6.2f} {level.missed:>6} {p95_alone:>8.2f} {p95_others:>8.2f} {change:>+6.0f}% "
        + "".join(f"{mb:>7,.0f} " for mb in level.rss)
        + f"{len(level.exceptions):>4} {len(level.errors):>4} "
        f"{level.idle_cpu:>5.2f} {level.server_per_change:>6.2f} {level.bench_per_change:>6.2f}  {count}"
    )


HEADER = (
    f"{'followers':>9} {'changes':>7} {'p50 s':>6} {'p95 s':>6} {'max s':>6} {'missed':>6} "
    f"{'others':>8} {'+class':>8} {'Δp95':>7} {'RSS MB':>7} {'joined':>7} {'→ end':>7} {'exc':>4} {'err':>4} "
    f"{'idle':>5} {'srv/ch':>6} {'me/ch':>6}  lecturer sees"
)


async def protocol_bench(server: Server, args: argparse.Namespace) -> None:
    """Every class size over the protocol client, each after its own baseline of other users."""
    await warm_up(server.base, server.workers, args.timeout)
    print(HEADER, flush=True)
    first_round = 0
    for n in args.followers:
        baseline = []  # right before each level: the box's own pace drifts (p95 0.13-0.22 s alone)
        if args.others:
            baseline = (await other_users(server.base, args.others, args.baseline, args.timeout)).times
        level = await class_level(server, n, args, first_round)
        first_round += level.changes
        print(report(level, baseline), flush=True)
        for message in (level.exceptions + level.errors)[:5]:
            print(f"    {message}", flush=True)


# ---------------------------------------------------------------- real browser tabs


def browser_bench(url: str, args: argparse.Namespace) -> None:
    """The class as real Chromium tabs: the same delay, read from the drawn page."""
    from playwright.sync_api import Page, sync_playwright

    def text_of(page: Page) -> str:
        try:
            box = f'input[aria-label^="{TEXT_LABEL}"]'
            return page.eval_on_selector(box, "(el) => el.value", strict=False)
        except Exception:  # a follower between two page runs has no text box for a moment
            return ""

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        lecturer = browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
        lecturer.set_default_timeout(90_000)
        lecturer.goto(url + START)
        lecturer.get_by_role("button", name="Start a class session").click()
        link = lecturer.locator(f"{part('sidebar')} code").first.inner_text(timeout=60_000).strip()
        followers = [browser.new_context(viewport={"width": 1280, "height": 720}).new_page()
                     for _ in range(args.browsers)]  # fmt: skip
        for page in followers:
            page.goto(link)
        time.sleep(5)
        delays: list[float] = []
        missed = 0
        for round_no in range(args.rounds):
            word = word_for(round_no)
            box = lecturer.get_by_role("textbox", name=re.compile(TEXT_LABEL))
            box.fill(word)
            box.press("Enter")
            changed, waiting = time.monotonic(), set(range(len(followers)))
            while waiting and time.monotonic() - changed < args.timeout:
                for i in list(waiting):
                    if text_of(followers[i]) == word:
                        delays.append(time.monotonic() - changed)
                        waiting.discard(i)
                time.sleep(0.05)
            missed += len(waiting)
            time.sleep(max(0.0, args.every - (time.monotonic() - changed)))
        shown = sum(page.locator(part("exception")).count() for page in [lecturer, *followers])
        browser.close()
    d = sorted(delays) or [float("nan")]
    print(f"{args.browsers} browser tabs x {args.rounds} changes: p50 {statistics.median(d):.2f} s, "
          f"p95 {pct(d, 0.95):.2f} s, max {d[-1]:.2f} s; missed {missed}; exceptions {shown}")  # fmt: skip


def main() -> None:
    """Parse the arguments, start serve.sh (or use --url) and run the class."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", default="50,100,200", help="class sizes, one level each")
    parser.add_argument("--minutes", type=float, default=5.0, help="per level")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between the lecturer's changes")
    parser.add_argument("--others", type=int, default=5, help="other users opening pages meanwhile")
    parser.add_argument("--baseline", type=float, default=60.0, help="seconds of other users alone")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--arrive", type=float, default=20.0, help="seconds over which the class joins")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--browsers", type=int, default=0, help="followers as Chromium tabs instead")
    parser.add_argument("--rounds", type=int, default=6, help="with --browsers: changes measured")
    parser.add_argument("--url", default=None, help="a running lab (no memory figures)")
    args = parser.parse_args()
    args.followers = [int(n) for n in args.followers.split(",") if n.strip()]
    if args.minutes > 60 or max(args.followers, default=0) > 2000:
        parser.error("--minutes is bounded to 60 and --followers to 2000")
    with ExitStack() as stack:
        if args.url:
            server = Server(args.url, args.url.rstrip("/"), args.workers)
        else:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-class-")))
            server = stack.enter_context(started("serve", args.workers, tmp))
        print(f"{server.name}; lecturer changes the text every {args.every:.0f} s; "
              f"{args.others} other users; delays in seconds", flush=True)  # fmt: skip
        if args.browsers:
            browser_bench(server.base, args)
        else:
            asyncio.run(protocol_bench(server, args))


if __name__ == "__main__":
    main()
