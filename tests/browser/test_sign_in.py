"""Sign-in for a class box, for real: an OpenID Connect provider on loopback
(oidc-provider-mock), the app started with an `[auth]` secrets file, Chromium signing people
in through the provider's own form. Every page asks for sign-in first and the link opened
comes back after it; /train records each run's owner, lists "my runs" and holds a person to
their limit; a run link still opens for another person; /admin lists the owners."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import oidc_provider_mock
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from attention_lab.frame.streamlit_dom import part
from attention_lab.serving.sqlite_store import SQLiteRunStore
from attention_lab.testing import fuzz
from attention_lab.testing.servers import running_app
from tests.support.browser import assert_no_exception, wait_for_app

PAGES = (*("" if page == "home" else page for page in fuzz.PAGES), "admin")  # every address
BUTTON = "Sign in with University login"


@pytest.fixture(scope="module")
def provider() -> Iterator[str]:
    with oidc_provider_mock.run_server_in_thread() as server:
        yield f"http://127.0.0.1:{server.server_port}"


@pytest.fixture(scope="module")
def class_box(provider: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The app with sign-in on, one run at once per person, admin@example.edu as admin."""
    folder = tmp_path_factory.mktemp("sign-in")
    secrets = folder / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        'cookie_secret = "a-cookie-secret-for-this-test-only-0123456789"\n'
        'client_id = "attention-lab"\n'
        'client_secret = "any"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n'
        'display_name = "University login"\n'
    )
    env = {"ATTENTION_LAB_RUNS_PER_PERSON": "1", "ATTENTION_LAB_ADMINS": "admin@example.edu"}
    with running_app(folder, env, args=("--secrets.files", str(secrets))) as url:
        yield url, folder / "runs"


def new_page(browser: Browser) -> tuple[BrowserContext, Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(60_000)
    return context, page


def sign_in(page: Page, email: str) -> None:
    """On the sign-in page: through the provider's form and back to the app, signed in."""
    page.get_by_role("button", name=BUTTON).click()
    page.wait_for_url(re.compile(r"/oauth2/authorize"))
    page.get_by_placeholder("sub").fill(email)
    page.get_by_role("button", name="Authorize").click()
    expect(page.locator(part("sidebar"))).to_contain_text(f"Signed in as {email}")
    wait_for_app(page)


def test_every_page_asks_for_sign_in_first(
    class_box: tuple[str, Path], browser: Browser, tmp_path: Path
) -> None:
    url, _ = class_box
    context, page = new_page(browser)
    try:
        for path in PAGES:
            page.goto(f"{url}/{path}?checkpoint=gpt-induction")
            expect(page.get_by_role("button", name=BUTTON)).to_be_visible()
            wait_for_app(page)
            main = page.locator(part("main"))
            expect(main.locator("h1")).to_have_text("Attention Lab")
            expect(main).to_contain_text("This lab is for a class")
            expect(page.locator(part("sidebar"))).to_have_count(0)  # no page, no menu
            assert page.locator("canvas").count() == 0  # nothing of the page was drawn
            assert_no_exception(page)
        page.screenshot(path=str(tmp_path / "sign-in.png"))
    finally:
        context.close()


def test_signed_in_people_own_runs_share_links_and_the_admin_sees_owners(
    class_box: tuple[str, Path], browser: Browser, tmp_path: Path
) -> None:
    url, runs = class_box
    alice, page = new_page(browser)
    run_id = ""
    try:
        page.goto(f"{url}/heads?checkpoint=gpt-induction")
        sign_in(page, "alice@example.edu")
        assert urlparse(page.url).path == "/heads"  # the link opened before sign-in came back
        assert parse_qs(urlparse(page.url).query)["checkpoint"] == ["gpt-induction"]
        expect(page.locator(f"{part('main')} h1")).to_contain_text("Heads")
        page.screenshot(path=str(tmp_path / "signed-in-heads.png"))

        page.goto(f"{url}/train")
        wait_for_app(page)
        steps = page.get_by_label("Steps")
        if not steps.is_visible():
            page.get_by_text("Model shape and optimiser").click()
        steps.fill("10000")  # still training when alice tries a second run
        steps.press("Enter")
        wait_for_app(page)
        page.locator(part("main")).get_by_role("button", name="Start").click()
        expect(page.locator(part("progress"))).to_be_visible()
        run_id = parse_qs(urlparse(page.url).query)["run"][0]
        mine = page.get_by_text("My runs (1)")
        expect(mine).to_be_visible()
        mine.click()
        expect(
            page.get_by_role("link", name=re.compile(r"my-reverse-.* · (queued|starting|running)"))
        ).to_be_visible()
        assert SQLiteRunStore(runs, spawn=False).info(run_id).owner == "alice@example.edu"

        second = alice.new_page()  # alice again, in another tab: her limit is one run at once
        second.goto(f"{url}/train")
        wait_for_app(second)
        second.locator(part("main")).get_by_role("button", name="Start").click()
        expect(second.locator(part("main"))).to_contain_text(
            "You already have 1 run(s) waiting or training; the limit per person is 1"
        )
        second.screenshot(path=str(tmp_path / "limit.png"))
        assert_no_exception(second)

        bob, other = new_page(browser)  # bob holds alice's run link: it opens for him
        try:
            other.goto(f"{url}/train?run={run_id}")
            sign_in(other, "bob@example.edu")
            assert parse_qs(urlparse(other.url).query)["run"] == [run_id]
            expect(other.locator(part("progress"))).to_be_visible()
            expect(other.get_by_text(re.compile(r"My runs \("))).to_have_count(0)  # bob started none
            assert_no_exception(other)
        finally:
            bob.close()

        admin, board = new_page(browser)
        try:
            board.goto(f"{url}/admin")
            sign_in(board, "admin@example.edu")
            expect(board.locator(part("main"))).to_contain_text("Run queue")
            expect(board.locator(part("main"))).to_contain_text("alice@example.edu")
            board.screenshot(path=str(tmp_path / "admin-owners.png"), full_page=True)
            assert_no_exception(board)
        finally:
            admin.close()

        page.get_by_role("button", name="Sign out").click()
        page.get_by_role("button", name="End session").click()  # the provider's own sign-out
        expect(page.get_by_role("button", name=BUTTON)).to_be_visible()
    finally:
        alice.close()
        if run_id:  # stop exactly the run this test started
            store = SQLiteRunStore(runs, spawn=False)
            store.stop(run_id)
            deadline = time.time() + 30
            while store.info(run_id).active and time.time() < deadline:
                time.sleep(0.2)
