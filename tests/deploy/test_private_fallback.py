"""A Streamlit whose internals moved (attention_lab.frame.streamlit_private): a real app process
whose AppSession names `_message_enqueued_callback` otherwise, as an upgrade might (a
`sitecustomize` on the test's PYTHONPATH renames it in Streamlit's source as it is imported).
The server log names the part once, the push and mirrors stay off, and a lecturer's two
followers (Chromium) still show each change of the lecturer's within 10 s, by their 2 s poll
(beside a working push the poll is 60 s); no page shows an exception."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from attention_lab.frame.streamlit_dom import part
from attention_lab.testing.servers import running_app
from tests.support.browser import assert_no_exception, wait_for_app

RENAME = "streamlit.runtime.app_session:_message_enqueued_callback:_on_message_enqueued"
PART = "AppSession._message_enqueued_callback"
WARNING = "lacks internals the lecture's push uses"
FOLLOW_S = 10.0  # the poll's 2 s and the follower's run on a busy box: far below the 60 s poll beside a push
SIZE = {"width": 1280, "height": 720}
BASICS = re.compile(r"/basics")
SHIM = '''"""Test shim (tests/deploy/test_private_fallback.py): Streamlit as an upgrade that renamed a
private name. ATTENTION_LAB_TEST_RENAME="module:old:new" renames `old` in that module's source."""

import importlib.machinery
import os
import re
import sys

MODULE, OLD, NEW = os.environ["ATTENTION_LAB_TEST_RENAME"].split(":")


class Renamed(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        source = re.sub(rf"\\b{OLD}\\b", NEW, self.get_source(fullname))
        return compile(source, self.path, "exec", dont_inherit=True)


class Finder:
    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname != MODULE:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.origin:
            spec.loader = Renamed(fullname, spec.origin)
            print(f"test shim: {MODULE}.{OLD} renamed {NEW}", file=sys.stderr, flush=True)
        return spec


sys.meta_path.insert(0, Finder)
'''


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The app process with the shim on its path: (its URL, its log)."""
    folder = tmp_path_factory.mktemp("private-fallback")
    shim = folder / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(SHIM)
    env = {"ATTENTION_LAB_TEST_RENAME": RENAME}
    with running_app(folder, env, python_path=str(shim)) as url:
        yield url, folder / "streamlit.log"


def tab(browser: Browser) -> tuple[BrowserContext, Page]:
    """A browser of its own (its own cookies: its own person and session)."""
    context = browser.new_context(viewport=SIZE)
    page = context.new_page()
    page.set_default_timeout(60_000)
    return context, page


def text_box(page: Page) -> Locator:
    """The reversal page's text box."""
    return page.get_by_role("textbox", name=re.compile("Text to reverse"))


def followed_within(followers: list[Page], shown: str, check: Callable[[Page], None]) -> float:
    """Seconds until every follower shows the change (`check(page)` passes), from now."""
    started = time.monotonic()
    for page in followers:
        check(page)
    took = time.monotonic() - started
    print(f"two followers showed {shown} {took:.2f} s after the lecturer's change")
    return took


def test_without_the_push_followers_follow_by_their_poll(app: tuple[str, Path], browser: Browser) -> None:
    """Two changes of the lecturer's text and one of the page, each shown by both followers."""
    url, log = app
    contexts = []
    try:
        ctx, lecturer = tab(browser)
        contexts.append(ctx)
        lecturer.goto(url + "/reversal?text=attention")
        wait_for_app(lecturer)
        lecturer.get_by_role("button", name="Start a class session").click()
        wait_for_app(lecturer)
        link = lecturer.locator(f"{part('sidebar')} code").first.inner_text().strip()
        followers = []
        for _ in range(2):
            ctx, page = tab(browser)
            contexts.append(ctx)
            page.goto(link)
            followers.append(page)
        for page in followers:
            expect(page).to_have_url(re.compile(r"/reversal\?.*text=attention"), timeout=30_000)
            expect(page.get_by_text("Following the lecturer")).to_be_visible()
            wait_for_app(page)
        expect(lecturer.locator(part("sidebar"))).to_contain_text("2 following", timeout=30_000)

        took = []
        for word in ("classroom", "polled"):
            text_box(lecturer).fill(word)
            text_box(lecturer).press("Enter")
            took.append(
                followed_within(
                    followers,
                    f"the text {word!r}",
                    lambda page, word=word: expect(text_box(page)).to_have_value(word, timeout=30_000),
                )
            )
            wait_for_app(lecturer)
        lecturer.get_by_role("link", name="Attention basics").click()  # the page
        took.append(
            followed_within(
                followers,
                "the page",
                lambda page: expect(page).to_have_url(BASICS, timeout=30_000),
            )
        )
        for page in [lecturer, *followers]:
            wait_for_app(page)
            assert_no_exception(page)
        assert max(took) < FOLLOW_S, took
    finally:
        for ctx in contexts:
            ctx.close()

    text = log.read_text()
    assert "test shim: streamlit.runtime.app_session._message_enqueued_callback renamed" in text
    warnings = [line for line in text.splitlines() if WARNING in line]
    assert len(warnings) == 1 and PART in warnings[0], warnings
    assert "Traceback" not in text, text[-3000:]
