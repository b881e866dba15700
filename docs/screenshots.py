"""Renew the guides' screenshots from the real app: `python docs/screenshots.py`.

Starts the app from this checkout (`streamlit run app/Home.py` on a free loopback port, on
CPU, its runs in a temporary folder), opens each shot's link in headless Chromium (Debian's
/usr/bin/chromium through Playwright, the flags the browser tests use) at its width and in
its colour scheme, waits until the page has run and its charts are drawn, and writes
docs/screenshots/<name>.png. `--only NAME ...` renews some; `--out DIR` writes elsewhere.
Needs the `test` extra (Playwright, oidc-provider-mock) and Chromium (`apt-get install -y chromium`).

Three apps, one after the other, each started only for the shots that need it: the lab
(with ATTENTION_LAB_ADMIN_TOKEN set to a random token that `admin` types into /admin's
password field), the lab with a models folder (ATTENTION_LAB_MODELS_DIR) holding a tiny
GPT-2-shaped byte-level BPE model imported with `import --from hf` (random weights, written
by tests/support/gpt2.py with torch, tokenizers and safetensors: no download, no
`transformers`), and the lab with sign-in on (an `[auth]` secrets file pointing at an
oidc-provider-mock server on loopback; the shot is the sign-in page, nobody signs in).
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from attention_lab.frame.streamlit_dom import inline, part

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "screenshots"
PHONE, PROJECTOR = (390, 844), (1280, 720)
ADMIN_TOKEN = secrets.token_urlsafe(24)  # this run's /admin token (16 characters or more)
IMPORTED = "tiny-bpe"  # the imported model's name in the models folder
SECTION_1 = 'h3:has-text("1 · Every head at once")'


@dataclass(frozen=True)
class Shot:
    name: str
    link: str
    size: tuple[int, int]
    scheme: str  # "light" or "dark"
    what: str
    scroll: str = ""  # a CSS selector scrolled to the top of the screen before the shot
    element: str = ""  # a CSS selector: shoot only that element (else the screen)
    app: str = "lab"  # which app: "lab", "models" (an imported model) or "sign-in"
    action: str = ""  # what to do on the page before the shot (see ACTIONS)


SHOTS = (
    Shot("teach-projector", "/reversal?text=attention&present=1", PROJECTOR, "light", "projector mode"),
    Shot(
        "teach-class-session",
        "/reversal?text=attention",
        (1280, 1000),
        "light",
        "a class session's sidebar",
        element=part("sidebar"),
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
    Shot(
        "learn-cost",
        "/cost?T=2048&window=256",
        (1280, 1000),
        "light",
        "/cost: FLOPs by part across T",
        'h2:has-text("2 · FLOPs")',
    ),
    Shot("reversal", "/reversal?text=attention", (1280, 1100), "light", "/reversal, cross-attention"),
    Shot("gpt", "/gpt", (1280, 1100), "light", "/gpt, every head, one opened"),
    Shot(
        "gpt-sample",
        "/gpt?text=def+f(x):&max_new=40&sampled=true",
        PROJECTOR,
        "light",
        "/gpt over the prompt and the sampled text",
        scroll=SECTION_1,
    ),
    Shot(
        "heads-composition",
        "/heads?checkpoint=gpt-induction",
        PROJECTOR,
        "light",
        "/heads, the composition maps",
        scroll='h3:has-text("How heads compose")',
    ),
    Shot("admin", "/admin", PROJECTOR, "light", "the admin's view (token typed)", action="admin-token"),
    Shot(
        "gpt-imported",
        f"/gpt?checkpoint={IMPORTED}&text=the+heads+attend+to+the+world&sampled=true",
        PROJECTOR,
        "light",
        "an imported byte-level BPE model on /gpt",
        scroll=SECTION_1,
        app="models",
    ),
    Shot("sign-in", "/", PROJECTOR, "light", "the sign-in page", app="sign-in"),
)

IDLE = inline("""() => {
    const main = document.querySelector(part("main"));
    if (!main || !main.querySelector("h1, " + part("heading"))) return false;
    const s = document.querySelector(part("status"));
    return !s || !/stop|running/i.test(s.innerText);
}""")


def settle(page, timeout: float = 120_000) -> None:
    """Wait until the script run is over (twice: a rerun may follow) and every chart is drawn."""
    for _ in range(2):
        page.wait_for_function(IDLE, timeout=timeout)
        page.wait_for_timeout(800)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.lab-chart')].every(c => c.hasAttribute('data-drawn'))",
        timeout=timeout,
    )
    if page.locator(part("exception")).count():
        raise RuntimeError(f"{page.url}: the page shows an exception")
    page.wait_for_timeout(500)


def start_class_session(page) -> str:
    """Click the sidebar's button; the follow link it shows."""
    page.get_by_role("button", name="Start a class session").click()
    code = page.locator(f"{part('sidebar')} code").filter(has_text="?follow=")
    code.first.wait_for(timeout=60_000)
    settle(page)
    return code.first.inner_text().strip()


def type_admin_token(page) -> None:
    """/admin's password field: type this run's token and open the view."""
    page.get_by_label("Admin token", exact=True).and_(page.locator("input")).fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Open the admin's view").click()
    page.get_by_role("heading", name="Run queue").wait_for(timeout=60_000)
    settle(page)


ACTIONS = {"admin-token": type_admin_token}


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
    if shot.action:
        ACTIONS[shot.action](page)
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


@contextlib.contextmanager
def app(kind: str, tmp: Path) -> Iterator[str]:
    """The app for `kind` running from this checkout, its files under `tmp`; yields its URL."""
    from attention_lab.testing.servers import running_app

    folder = tmp / kind
    folder.mkdir()
    env = {"ATTENTION_LAB_ADMIN_TOKEN": ADMIN_TOKEN}
    if kind == "lab":
        with running_app(folder, env) as url:
            yield url
    elif kind == "models":
        with running_app(folder, {**env, "ATTENTION_LAB_MODELS_DIR": str(imported_models(folder))}) as url:
            yield url
    elif kind == "sign-in":
        import oidc_provider_mock

        with oidc_provider_mock.run_server_in_thread() as server:
            secrets_file = folder / "secrets.toml"
            secrets_file.write_text(
                "[auth]\n"
                'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
                f'cookie_secret = "{secrets.token_urlsafe(32)}"\n'
                'client_id = "attention-lab"\n'
                'client_secret = "any"\n'
                f'server_metadata_url = "http://127.0.0.1:{server.server_port}/.well-known/openid-configuration"\n'
                'display_name = "University login"\n'
            )
            with running_app(folder, args=("--secrets.files", str(secrets_file))) as url:
                yield url
    else:
        raise ValueError(f"no app {kind!r}")


def imported_models(folder: Path) -> Path:
    """A models folder holding IMPORTED: a tiny GPT-2-layout model (random weights, a BPE
    tokenizer trained here) imported as `attention-lab import --from hf` does."""
    sys.path.insert(0, str(ROOT))  # tests.support
    from tests.support.gpt2 import write_hf_gpt2
    from transformer_core.io.importers import import_model

    models = folder / "models"
    import_model(write_hf_gpt2(folder / "hf"), "hf", models / IMPORTED)
    return models


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

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for kind in dict.fromkeys(s.app for s in wanted):  # one app at a time, in SHOTS' order
            with app(kind, Path(tmp)) as base:
                follow: str | None = None
                for shot in (s for s in wanted if s.app == kind):
                    follow = take(browser, base, shot, args.out, follow) or follow
                while keep_open:
                    keep_open.pop().close()
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
