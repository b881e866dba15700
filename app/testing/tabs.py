"""Open tabs that stay open, over the protocol client (attention_lab.testing.protocol): a class
follower taking the lecturer's pushed views, a /train tab watching its run, and the deep
links every app process opens once before anything is measured.

Why here: the deploy tests and the load benchmarks drive the same tabs, so a change to what a
page sends is followed in one place.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from websockets.asyncio.client import ClientConnection

from attention_lab.frame.streamlit_private import HEALTH, BackMsg
from attention_lab.testing.protocol import (
    ROUTE,
    Browser,
    ProtocolError,
    RunOutcome,
    open_page,
    read_run,
    read_shown,
    rerun_msg,
)

#: the deep links a lecturer posts (README "Pages"; USERS.md walks 1 and 6)
DEEP_LINKS = [
    "/gpt?text=The%20with%20statement",
    "/reversal?text=attention",
    "/basics?heads=2",
    "/positions?d_model=64&length=50",
    "/variance?d_k=16",
    "/train",
    "/",
]
TEXT_LABEL = "Text to reverse"  # /reversal's text box, which a class session follows


async def warm_up(base: str, workers: int, page_timeout: float, links: Sequence[str] = DEEP_LINKS) -> None:
    """Every app process opens every link once (model loads, first compiles): the deep links unless
    told otherwise."""
    seen: set[str | None] = set()
    for attempt in range(16 * workers):
        browser = Browser(base, cookies={ROUTE: f"warm-{attempt}"})
        _, upstream = await browser.get(HEALTH, page_timeout)
        if upstream in seen:
            continue
        seen.add(upstream)
        await asyncio.gather(*(open_page(browser, link, page_timeout) for link in links))
        if len(seen) >= workers:
            return


def text_shown(outcome: RunOutcome) -> str | None:
    """The value /reversal's text box shows in this run, None where it drew none."""
    return next((v for label, (_, v) in outcome.text_inputs.items() if label.startswith(TEXT_LABEL)), None)


@dataclass
class Tab:
    """One open tab: its browser (cookies), the URL the page set and the page shown."""

    browser: Browser
    link: str
    page_hash: str = ""

    def note(self, outcome: RunOutcome) -> RunOutcome:
        """Keep the URL and page a run set, as a browser does; returns the outcome."""
        self.page_hash = outcome.page_hash or self.page_hash
        if outcome.query_string is not None:
            self.link = "/?" + outcome.query_string if outcome.query_string else "/"
        return outcome


def text_change(tab: Tab, box_id: str, text: str) -> bytes:
    """The BackMsg a browser sends when the text box gets `text` and Enter is pressed."""
    msg = BackMsg()
    msg.ParseFromString(rerun_msg(tab.link, page_hash=tab.page_hash))
    state = msg.rerun_script.widget_states.widgets.add()
    state.id, state.string_value = box_id, text
    return msg.SerializeToString()


@dataclass
class Follower:
    """A class follower's open tab: it takes every run the server starts (the lecturer's new
    view, pushed) and, in `follow`, answers the page's own rare poll too.

    ws: its open websocket (`follow` opens its own); keep: how many outcomes `runs` holds
    (None: all; a benchmark's class of hundreds keeps none, a test reads them back)."""

    tab: Tab
    ws: ClientConnection | None = None
    keep: int | None = 0
    runs: deque[RunOutcome] = field(init=False)
    seen: dict[str, float] = field(default_factory=dict)  # text -> when first shown
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    leaving: bool = False  # the tab closes at its next poll (a cancel alone can be lost in wait_for)

    def __post_init__(self) -> None:
        self.runs = deque(maxlen=self.keep)

    def take(self, outcome: RunOutcome) -> RunOutcome:
        """Note what a run showed (URL, page, text, exceptions); returns it."""
        self.tab.note(outcome)
        self.runs.append(outcome)
        self.exceptions.extend(outcome.exceptions)
        text = text_shown(outcome)
        if text is not None:
            self.seen.setdefault(text, outcome.text_at or time.monotonic())
        return outcome

    def showed(self, text: str) -> bool:
        """Whether any run of this tab showed `text` in the text box."""
        return text in self.seen

    def texts(self) -> str:
        """Every text the kept runs showed, one a line."""
        return "\n".join(t for r in self.runs for t in r.texts)

    async def listen(self, timeout: float = 60.0) -> None:
        """Take what the server sends by itself, until cancelled (no polls of its own)."""
        assert self.ws is not None, "listen() needs the tab's open websocket"
        while True:
            first = await self.ws.recv()
            self.take(await read_shown(self.ws, timeout, first))

    async def follow(self, ready: asyncio.Event, timeout: float) -> None:
        """Open the follow link, then, as the open tab does until cancelled or leaving, take the
        runs the server starts and answer the page's own poll; errors are kept, not raised."""
        try:
            await self.tab.browser.get(self.tab.link, timeout)
            async with self.tab.browser.connect() as ws:
                self.ws = ws
                await ws.send(rerun_msg(self.tab.link))
                page = self.take(await read_run(ws, timeout))
                ready.set()
                await self._stay(ws, page, timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - counted and shown
            self.errors.append(f"{type(exc).__name__}: {exc}"[:300])
        finally:
            ready.set()

    async def _stay(self, ws: ClientConnection, page: RunOutcome, timeout: float) -> None:
        """The open tab: take what the server pushes, poll when the page's own poll is due."""
        polled = time.monotonic()
        while not self.leaving:
            if not page.auto_reruns:
                raise ProtocolError("the follower's page has no poll (not following)")
            poll, interval = min(page.auto_reruns.items(), key=lambda kv: kv[1])
            wait = polled + interval - time.monotonic()
            if wait <= 0:  # the page's own poll is due
                polled, tab = time.monotonic(), self.tab
                await ws.send(rerun_msg(tab.link, fragment_id=poll, auto=True, page_hash=tab.page_hash))
                outcome = self.take(await read_run(ws, timeout, fragment=True))
            else:
                try:  # what the server sends by itself: the lecturer's new view, pushed
                    first = await asyncio.wait_for(ws.recv(), min(wait, 1.0))
                except TimeoutError:
                    continue
                outcome = self.take(await read_shown(ws, timeout, first))
            if outcome.full_run:  # the lecturer's new view opened
                page = outcome


@dataclass
class Watcher:
    """A /train tab that pressed Start and stays open, answering the page's auto-reruns.

    Like a browser it keeps the URL the page sets (the run's private link, ?run=ID) and
    sends it with every rerun. stop() presses the page's Stop button."""

    browser: Browser
    link: str = "/train"
    run_id: str | None = None
    steps: list[int] = field(default_factory=list)  # training steps seen on the page
    errors: list[str] = field(default_factory=list)
    finished: bool = False
    task: asyncio.Task[None] | None = None
    page_hash: str = ""
    _stop_id: str | None = None

    async def run(self, ready: asyncio.Event, timeout: float) -> None:
        """Press Start, then watch as an open tab does until cancelled; errors are kept."""
        try:
            await self.browser.get(self.link, timeout)
            async with self.browser.connect() as ws:
                outcome = await self._start(ws, timeout)
                ready.set()
                await self._watch(ws, outcome, timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported, not hidden
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            ready.set()

    async def _start(self, ws: ClientConnection, timeout: float) -> RunOutcome:
        """Open /train and press Start; the page after it (its live panel), or ProtocolError."""
        await ws.send(rerun_msg(self.link))
        first = self._note(await read_run(ws, timeout))
        if "Start" not in first.buttons:
            raise ProtocolError(f"/train shows no Start button (buttons: {sorted(first.buttons)})")
        start_id, disabled = first.buttons["Start"]
        if disabled:
            raise ProtocolError("/train: Start is disabled (a run is already active here)")
        await ws.send(rerun_msg(self.link, widgets=[(start_id, True)], page_hash=self.page_hash))
        outcome = self._note(await read_run(ws, timeout))
        if outcome.exceptions:
            raise ProtocolError(f"/train after Start: {outcome.exceptions[0]}")
        if not outcome.auto_reruns:
            raise ProtocolError("/train after Start: no live panel (no auto-rerun fragment)")
        return outcome

    async def _watch(self, ws: ClientConnection, outcome: RunOutcome, timeout: float) -> None:
        """Rerun the live panel at its interval until the run ends; then stay open, idle."""
        while True:  # as an open tab: rerun the live fragment at its interval
            fragment_id, interval = next(iter(outcome.auto_reruns.items()))
            await asyncio.sleep(interval)
            await ws.send(rerun_msg(self.link, fragment_id=fragment_id, auto=True, page_hash=self.page_hash))
            fragment = self._note(await read_run(ws, timeout, fragment=True))
            if fragment.exceptions:
                self.errors.append(fragment.exceptions[0])
            if fragment.full_run:  # the page redrew itself (st.rerun(scope="app"))
                if not fragment.auto_reruns:
                    self.finished = True  # no live panel: the run has ended
                    await asyncio.Event().wait()  # the tab stays open, idle
                outcome = fragment

    def _note(self, outcome: RunOutcome) -> RunOutcome:
        """Keep the URL, page, Stop button and training steps a run showed; returns it."""
        self.page_hash = outcome.page_hash or self.page_hash
        if outcome.query_string is not None:
            self.link = "/train" + (f"?{outcome.query_string}" if outcome.query_string else "")
            match = re.search(r"(?:^|&)run=([^&]+)", outcome.query_string)
            self.run_id = match.group(1) if match else self.run_id
        if "Stop" in outcome.buttons:
            self._stop_id = outcome.buttons["Stop"][0]
        for text in outcome.texts:
            match = re.search(r"\bstep ([\d,]+) /", text)
            if match:
                self.steps.append(int(match.group(1).replace(",", "")))
        return outcome

    async def stop(self, timeout: float) -> None:
        """Cancel the watching loop, then press Stop on a fresh connection of this browser."""
        if self.task:
            self.task.cancel()
            await asyncio.gather(self.task, return_exceptions=True)
        if self.finished or not self._stop_id:
            return
        try:
            async with self.browser.connect() as ws:
                await ws.send(rerun_msg(self.link, widgets=[(self._stop_id, True)], page_hash=self.page_hash))
                await read_run(ws, timeout)
        except Exception as exc:  # noqa: BLE001 - the server-side safety net follows
            print(f"    could not press Stop on /train: {exc}", flush=True)


async def start_trainings(base: str, count: int, timeout: float) -> list[Watcher]:
    """`count` /train tabs that pressed Start and keep watching, one after the other."""
    watchers = []
    for i in range(count):
        watcher = Watcher(Browser(base, cookies={ROUTE: f"training-{i}"}))
        ready = asyncio.Event()
        watcher.task = asyncio.create_task(watcher.run(ready, timeout))
        await ready.wait()
        if watcher.errors:
            raise ProtocolError(f"training {i + 1} did not start: {watcher.errors[0]}")
        watchers.append(watcher)
    return watchers
