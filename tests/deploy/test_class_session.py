"""Issue 23, the lecture as one room, through deploy/serve.sh --workers 2 and Chromium: a
lecturer starts a class session; three followers open its link (two of them routed by nginx
to the other app process) and see the lecturer's text, head and page; "Explore on my own"
stops one, "Follow again" brings it back; the lecturer sees the count and ends the session;
an unknown code gets a notice."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import Browser, BrowserContext, Page, expect

from attention_lab.frame.streamlit_dom import keyed, part
from tests.support.browser import assert_no_exception, wait_for_app
from tests.support.serve import ROUTE, Served, serving, upstream_of

SIZE = {"width": 1280, "height": 720}
FOLLOW_S = 10_000  # ms a follower may take to show a change: under the 60 s fallback poll, so the push did it


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(tmp_path_factory.mktemp("class")) as served:
        yield served


def routes(served: Served) -> tuple[list[str], list[str]]:
    """Route cookie values nginx sends to one app process, and values it sends to the other."""
    by_upstream: dict[str, list[str]] = {}
    for i in range(200):
        value = f"class-{i}"
        by_upstream.setdefault(upstream_of(served.url, f"{ROUTE}={value}"), []).append(value)
        if len(by_upstream) == 2 and all(len(v) >= 2 for v in by_upstream.values()):
            one, other = by_upstream.values()
            return one[:2], other[:2]
    raise AssertionError(f"nginx did not spread 200 route cookies over two processes: {by_upstream}")


def browser_on(browser: Browser, served: Served, route: str) -> tuple[BrowserContext, Page]:
    context = browser.new_context(viewport=SIZE)
    context.add_cookies([{"name": ROUTE, "value": route, "url": served.url}])
    page = context.new_page()
    page.set_default_timeout(60_000)
    return context, page


def text_box(page: Page):  # noqa: ANN201  (a Locator)
    return page.get_by_role("textbox", name=re.compile("Text to reverse"))


def test_followers_on_both_processes_follow_the_lecturer(
    served: Served, browser: Browser, tmp_path: Path
) -> None:
    (lecturer_route, beside), (across_1, across_2) = routes(served)
    other_routes = [beside, across_1, across_2]  # one follower on the lecturer's process, two on the other
    contexts = []
    try:
        ctx, lecturer = browser_on(browser, served, lecturer_route)
        contexts.append(ctx)
        lecturer.goto(served.url + "/reversal?text=attention")
        wait_for_app(lecturer)
        lecturer.get_by_role("button", name="Start a class session").click()
        wait_for_app(lecturer)
        link = lecturer.locator(f"{part('sidebar')} code").first.inner_text().strip()
        assert re.fullmatch(re.escape(served.url) + r"/\?follow=[A-Za-z0-9_-]{16}", link), link
        expect(lecturer.get_by_role("img", name="QR code of the follow link")).to_be_visible()

        followers = []
        for route in other_routes:
            ctx, page = browser_on(browser, served, route)
            contexts.append(ctx)
            page.goto(link)
            followers.append(page)
        for page in followers:
            expect(page).to_have_url(re.compile(r"/reversal\?.*text=attention"), timeout=FOLLOW_S)
            expect(page.get_by_text("Following the lecturer")).to_be_visible()
        expect(lecturer.locator(part("sidebar"))).to_contain_text("3 following", timeout=FOLLOW_S)
        # a follower's tab keeps each view that stayed 2 s: the first, before the lecturer moves on
        first_kept = followers[1].get_by_role("button", name="Download the view you followed (HTML)")
        expect(first_kept).to_be_visible(timeout=FOLLOW_S)

        text_box(lecturer).fill("classroom")  # the lecturer's text
        text_box(lecturer).press("Enter")
        started = time.monotonic()
        for page in followers:
            expect(text_box(page)).to_have_value("classroom", timeout=FOLLOW_S)
        took = time.monotonic() - started
        print(f"three followers showed the lecturer's new text {took:.2f} s after it was entered")

        lecturer.get_by_role("combobox", name="Head").click()  # the head: the large map follows
        lecturer.get_by_role("option", name="0", exact=True).click()
        lecturer.get_by_role("combobox", name="Layer").click()
        lecturer.get_by_role("option", name="0", exact=True).click()
        for page in followers:
            expect(page).to_have_url(re.compile(r"layer=0.*head=0|head=0.*layer=0"), timeout=FOLLOW_S)
        for page in followers[1:]:  # on one process: one ran the page, the other got its changes
            wait_for_app(page)
            expect(page.locator(f"{keyed('rev_cross_head')} canvas")).to_have_attribute(
                "aria-label", re.compile("Layer 0 head 0")
            )
            assert_no_exception(page)
        # the head view kept too, before the lecturer moves on
        kept_views = followers[1].get_by_role(
            "button", name=re.compile(r"Download the ([2-9]|\d\d) views you followed")
        )
        expect(kept_views).to_be_visible(timeout=FOLLOW_S)
        lecturer.screenshot(path=str(tmp_path / "lecturer.png"))
        followers[1].screenshot(path=str(tmp_path / "follower.png"))
        side_by_side(
            tmp_path / "lecturer.png", tmp_path / "follower.png", tmp_path / "lecturer-and-follower.png"
        )

        followers[0].get_by_role("button", name="Explore on my own").click()  # leaves; keeps the view
        expect(followers[0].get_by_role("button", name="Follow again")).to_be_visible()
        lecturer.get_by_role("link", name="GPT explorer").click()  # the page
        for page in followers[1:]:
            expect(page).to_have_url(re.compile(r"/gpt"), timeout=FOLLOW_S)
        time.sleep(3)
        assert "/reversal" in followers[0].url and text_box(followers[0]).input_value() == "classroom"
        followers[0].get_by_role("button", name="Follow again").click()
        expect(followers[0]).to_have_url(re.compile(r"/gpt"), timeout=FOLLOW_S)
        for page in [lecturer, *followers]:
            wait_for_app(page)
            assert_no_exception(page)

        kept_views = followers[1].get_by_role(
            "button", name=re.compile(r"Download the ([3-9]|\d\d) views you followed")
        )
        expect(kept_views).to_be_visible(timeout=FOLLOW_S)  # the GPT view, kept too
        lecturer.get_by_role("button", name="End the class session").click()
        for page in followers:
            expect(page.get_by_text("The lecturer ended the class session")).to_be_visible(timeout=FOLLOW_S)
        assert "/reversal" not in lecturer.url  # nothing a follower did moved the lecturer
        # the views a follower was shown, kept in its tab, as one offline file
        keep = followers[1].get_by_role("button", name=re.compile(r"Download the [3-9] views you followed"))
        with followers[1].expect_download() as download:
            keep.click()
        kept = tmp_path / download.value.suggested_filename
        download.value.save_as(kept)
        views = re.findall(r'<h2 tabindex="-1">View \d+: ([^<]+)</h2>', kept.read_text())
        assert len(views) >= 3 and views[0] == "Reversal explorer" and views[-1] == "GPT explorer", views
        assert "Text to reverse (letters a–z, at most 30): classroom" in kept.read_text()
    finally:
        for ctx in contexts:
            ctx.close()


def test_an_unknown_code_is_named(served: Served, browser: Browser) -> None:
    ctx, page = browser_on(browser, served, "class-unknown")
    try:
        page.goto(served.url + "/?follow=AAAAAAAAAAAAAAAA")
        wait_for_app(page)
        expect(page.get_by_text("This class session link is unknown or has ended")).to_be_visible()
        assert_no_exception(page)
    finally:
        ctx.close()


def side_by_side(left: Path, right: Path, out: Path) -> None:
    """Two screenshots in one image, for the issue's report."""
    a, b = Image.open(left), Image.open(right)
    both = Image.new("RGB", (a.width + b.width + 16, max(a.height, b.height)), "white")
    both.paste(a, (0, 0))
    both.paste(b, (a.width + 16, 0))
    both.save(out)
