"""Faults heal: `kill -9` one app process of deploy/serve.sh while a class uses the box.

    python benchmarks/bench_load.py --chaos [--workers 2] [--users 20] [--before 20] [--after 40]

Starts serve.sh (--workers N, default 2) on a free port with a temporary runs folder, warms
every app process, starts one training on /train (a browser tab that pressed Start and keeps
watching), then runs --users closed-loop users over the deep links (bench_load's protocol
client). After --before seconds it SIGKILLs the app process that serves the training's tab
(a crash: nothing of it says goodbye) and goes on for --after seconds. A user whose page
fails opens the same link again (a reload: the view comes back from the URL).

Prints: which process was killed and when; the seconds until serve.sh had restarted it and
it answered its health check; per user the seconds from the kill to its next page served
(max and p50 over the users, and over the killed process's users alone); pages that failed
after the kill; which processes served the users after the kill; whether the training
survived (its run process is not the app process's child in the process-group sense: it is
spawned in a session of its own) and went on training; exceptions shown on pages.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import statistics
import time
import urllib.request
from dataclasses import dataclass, field

from attention_lab.frame.streamlit_private import HEALTH
from attention_lab.testing.protocol import ROUTE, Browser, open_page
from attention_lab.testing.servers import Server, descendants
from attention_lab.testing.tabs import DEEP_LINKS, start_trainings, warm_up


@dataclass
class UserLog:
    """One user's pages: (finished at, ok, upstream) in monotonic seconds."""

    route: str
    pages: list[tuple[float, bool, str | None]] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)

    def first_ok_after(self, moment: float) -> tuple[float, str | None] | None:
        return next(((t, up) for t, ok, up in self.pages if ok and t > moment), None)

    def upstream_before(self, moment: float) -> str | None:
        ups = [up for t, ok, up in self.pages if ok and t < moment and up]
        return ups[-1] if ups else None


def app_pid(server: Server, port: str) -> int | None:
    """The streamlit process of serve.sh listening on `port` (from its command line)."""
    assert server.proc is not None
    for pid in descendants(server.proc.pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(args) and port.encode() in args:
            return pid
    return None


def healthy(port: str) -> bool:
    """Whether the app process on `port` answers its health check now."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{HEALTH}", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


async def restarted_after(server: Server, port: str, killed_pid: int, killed_at: float) -> float:
    """Seconds from the kill until a new process on `port` answers its health check."""
    while True:
        pid = app_pid(server, port)
        if pid and pid != killed_pid and await asyncio.to_thread(healthy, port):
            return time.monotonic() - killed_at
        if time.monotonic() - killed_at > 300:
            return float("nan")
        await asyncio.sleep(0.2)


async def user_loop(log: UserLog, base: str, index: int, end: float, page_timeout: float) -> None:
    """One user opening the deep links until `end`; a failed page is opened again."""
    browser = Browser(base, cookies={ROUTE: log.route})
    links = itertools.islice(itertools.cycle(DEEP_LINKS), index, None)
    link = next(links)
    while time.monotonic() < end:
        try:
            page = await open_page(browser, link, page_timeout)
        except Exception:  # noqa: BLE001 - a failed page is what this measures; the same link again
            log.pages.append((time.monotonic(), False, None))
            await asyncio.sleep(0.2)  # a reload is not instant either
            continue
        log.pages.append((time.monotonic(), True, page.upstream))
        log.exceptions.extend(page.exceptions)
        link = next(links)


async def chaos(server: Server, users: int, before: float, after: float, page_timeout: float) -> None:
    """Load, kill -9 the training tab's app process, load on; print how the box healed."""
    from attention_lab.serving import open_run_store

    await warm_up(server.base, server.workers, page_timeout)
    [watcher] = await start_trainings(server.base, 1, page_timeout)
    _, upstream = await watcher.browser.get(HEALTH, page_timeout)
    port = (upstream or "").rsplit(":", 1)[-1]
    victim = app_pid(server, port)
    if victim is None:
        raise SystemExit(f"no app process found on port {port!r} (X-Upstream {upstream!r})")
    logs = [UserLog(f"chaos-{i}") for i in range(users)]
    start = time.monotonic()
    end = start + before + after
    loops = [
        asyncio.create_task(user_loop(log, server.base, i, end, page_timeout)) for i, log in enumerate(logs)
    ]
    await asyncio.sleep(before)
    steps_before = max(watcher.steps, default=0)
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    print(f"killed app process pid {victim} (port {port}) at {killed_at - start:.1f} s", flush=True)
    restart = await restarted_after(server, port, victim, killed_at)
    await asyncio.gather(*loops)
    report(logs, killed_at, port, restart)

    run = open_run_store(server.runs, 1).info(watcher.run_id) if watcher.run_id else None
    print(
        f"training {watcher.run_id}: {run.status if run else 'unknown'} after the kill "
        f"(step {steps_before:,} seen before it; its tab: {'; '.join(watcher.errors) or 'no errors'})"
    )
    server.run_ids.append(watcher.run_id or "")
    await watcher.stop(page_timeout)


def report(logs: list[UserLog], killed_at: float, port: str, restart: float) -> None:
    """Print when every user was served again, what failed meanwhile and where users went."""
    back = {log.route: log.first_ok_after(killed_at) for log in logs}
    waits = [t - killed_at for t, _ in (b for b in back.values() if b)]
    victims = [log for log in logs if (log.upstream_before(killed_at) or "").endswith(f":{port}")]
    victim_waits = [back[log.route][0] - killed_at for log in victims if back[log.route]]
    failed = sum(1 for log in logs for t, ok, _ in log.pages if not ok and t > killed_at)
    served_by = sorted({up for b in back.values() if b for up in [b[1]] if up})
    never = sum(1 for b in back.values() if b is None)
    print(f"serve.sh restarted it and it answered its health check after {restart:.1f} s")
    print(
        f"every user served again after {max(waits, default=float('nan')):.2f} s "
        f"(p50 {statistics.median(waits) if waits else float('nan'):.2f} s; {never} never)"
    )
    print(
        f"the killed process's {len(victims)} users: served again after "
        f"max {max(victim_waits, default=float('nan')):.2f} s, "
        f"p50 {statistics.median(victim_waits) if victim_waits else float('nan'):.2f} s"
    )
    print(f"pages that failed after the kill: {failed}; first pages after it served by {served_by}")
    exceptions = [e for log in logs for e in log.exceptions]
    print(
        f"exceptions shown on pages: {len(exceptions)}" + (f" (first: {exceptions[0]})" if exceptions else "")
    )
