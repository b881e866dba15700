"""Followers in step mirror one leader's run (attention_lab.lecture.mirror.Mirrors), through a real app
process and Streamlit's own websocket protocol (the benchmarks' client): every follower shows
each new view of the lecturer's; the page runs once for the followers in step, not once each;
a follower with something of its own (a tour draft in its sidebar) runs the page on its own,
and no other follower ever shows it; a mirror's next run of its own starts from the view it
shows (its typing is taken, "Explore on my own" keeps the view)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from attention_lab.frame.streamlit_private import BackMsg
from attention_lab.serving.page_stats import PageCounter
from attention_lab.testing.protocol import Browser, read_run, rerun_msg
from attention_lab.testing.servers import running_app
from attention_lab.testing.tabs import TEXT_LABEL, Follower, Tab, text_change, text_shown
from tests.support.serve import in_own_loop

FOLLOWERS = 4  # on one app process: one leader, two mirrors, one with a tour draft of its own
TIMEOUT = 60.0
START = "/reversal?text=attention"
DRAFT_SHOWN = "1 scene: reversal"  # the sidebar's tour recorder, once a view was added


async def change_and_wait(lecturer: Tab, ws, box_id: str, word: str, followers: list[Follower]) -> float:  # noqa: ANN001
    changed = time.monotonic()
    await ws.send(text_change(lecturer, box_id, word))
    outcome = lecturer.note(await read_run(ws, TIMEOUT))
    assert not outcome.exceptions, outcome.exceptions
    while not all(f.showed(word) for f in followers):
        assert time.monotonic() - changed < 30, [f.showed(word) for f in followers]
        await asyncio.sleep(0.1)
    return time.monotonic() - changed


async def lecture(url: str, runs: Path) -> None:
    stats = PageCounter(runs)
    async with contextlib.AsyncExitStack() as stack:
        lecturer = Tab(Browser(url), START)
        await lecturer.browser.get(START, TIMEOUT)
        ws = await stack.enter_async_context(lecturer.browser.connect())
        await ws.send(rerun_msg(START))
        page = lecturer.note(await read_run(ws, TIMEOUT))
        start = page.buttons["Start a class session"][0]
        await ws.send(rerun_msg(lecturer.link, [(start, True)], page_hash=lecturer.page_hash))
        page = lecturer.note(await read_run(ws, TIMEOUT))
        link = "/" + next(c.strip() for c in page.codes if "?follow=" in c).split("/", 3)[3]
        box_id = next(i for label, (i, _) in page.text_inputs.items() if label.startswith(TEXT_LABEL))

        followers = []
        for _ in range(FOLLOWERS):
            tab = Tab(Browser(url), link)
            await tab.browser.get(link, TIMEOUT)
            follower = Follower(tab, await stack.enter_async_context(tab.browser.connect()), keep=None)
            await follower.ws.send(rerun_msg(link))
            first = follower.take(await read_run(follower.ws, TIMEOUT))
            assert text_shown(first) == "attention" and "Explore on my own" in first.buttons
            followers.append(follower)

        # One follower records a tour draft: its sidebar now shows something of its own.
        own = followers[0]
        shown = own.runs[-1]
        note, add = shown.text_inputs["Note for this view"][0], shown.buttons["Add this view to the tour"][0]
        ask = rerun_msg(own.tab.link, [(add, True)], page_hash=own.tab.page_hash)
        msg = BackMsg()
        msg.ParseFromString(ask)
        typed = msg.rerun_script.widget_states.widgets.add()
        typed.id, typed.string_value = note, "my own note"
        await own.ws.send(msg.SerializeToString())
        assert DRAFT_SHOWN in own.take(await read_run(own.ws, TIMEOUT)).texts

        listeners = [asyncio.create_task(f.listen(TIMEOUT)) for f in followers]
        try:
            await asyncio.sleep(1.0)  # the watch's rounds settle (every follower shows version 1)
            for word in ("classroom", "mirrored"):
                before = stats.figures().runs_total
                took = await change_and_wait(lecturer, ws, box_id, word, followers)
                await asyncio.sleep(1.0)  # late runs would be counted too
                page_runs = stats.figures().runs_total - before
                print(f"{word}: all {FOLLOWERS} followers in {took:.2f} s; {page_runs} page runs")
                # the lecturer's run, the leader's and the follower with a draft: not one per follower
                assert page_runs <= 3 < 1 + FOLLOWERS, page_runs
            # the second change reached the mirrors as the changed elements alone, outside a run
            updates = [r for f in followers for r in f.runs if text_shown(r) == "mirrored" and not r.full_run]
            assert updates and all(not r.buttons for r in updates), len(updates)
        finally:
            for task in listeners:
                task.cancel()
            await asyncio.gather(*listeners, return_exceptions=True)

        # A mirror holds the leader's state as its own: what its person does next is its own.
        typing, leaving = followers[2], followers[3]
        boxes = next(r.text_inputs for r in reversed(typing.runs) if r.text_inputs)
        box = next(i for label, (i, _) in boxes.items() if label.startswith(TEXT_LABEL))
        await typing.ws.send(text_change(typing.tab, box, "mine"))
        typed = typing.take(await read_run(typing.ws, TIMEOUT))
        assert "text=mine" in (typed.query_string or ""), typed.query_string  # taken, not the lecturer's
        explore = next(r.buttons for r in reversed(leaving.runs) if r.buttons)["Explore on my own"][0]
        await leaving.ws.send(rerun_msg(leaving.tab.link, [(explore, True)], page_hash=leaving.tab.page_hash))
        left = leaving.take(await read_run(leaving.ws, TIMEOUT))
        assert "Follow again" in left.buttons and "text=mirrored" in leaving.tab.link  # keeps the view

        for follower in followers:
            assert not [e for r in follower.runs for e in r.exceptions]
        assert DRAFT_SHOWN in own.texts()
        for other in followers[1:]:  # the draft never reached a mirror: each showed only its own
            assert DRAFT_SHOWN not in other.texts() and "my own note" not in other.texts()


def test_followers_in_step_share_one_run_and_nothing_of_their_own(tmp_path: Path) -> None:
    with running_app(tmp_path) as url:
        in_own_loop(lecture(url, tmp_path / "runs"))
