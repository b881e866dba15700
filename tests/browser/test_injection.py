"""No script injection (issue 27): script payloads in every URL parameter a page reads, in every
text field of every page, in a corpus upload (its content and its file name) and in a recorded
tour's title and note never run, never become markup in the page (nor in a chart's shadow root
or a frame) and never become a `javascript:` link.

A sentinel installed before any page script records every alert; each payload either calls
alert, pushes onto that record or sets the page's title, and its markup carries class `xss`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import Browser, Page, expect

from attention_lab.frame.streamlit_dom import inline, keyed, part
from attention_lab.testing import fuzz
from tests.support.browser import ROOT, assert_no_exception, wait_for_app

SENTINEL = "window.__xss = []; window.alert = (m) => window.__xss.push(String(m));"
PAYLOADS = [
    "<img src=x class=xss onerror=alert(1)>",
    "<script>alert(2)</script>",
    '"><svg class=xss onload=alert(3)>',
    '\'"><iframe class=xss srcdoc="<script>parent.alert(4)</script>">',
    "javascript:alert(5)",
    "[a](javascript:alert(6))",
    "{{7*7}}",
    "`<img src=x class=xss onerror=\"document.title='xss';window.__xss.push(8)\">`",
    '<a class=xss href="javascript:alert(9)">link</a>',
    "x`` <b class=xss onmouseover=alert(10)>b</b> ``",
    "![xss](x)",  # a Markdown image: from any address, e.g. a tracking pixel on a shared link
    "` ![xss](x) [b](javascript:alert(11)) `",  # out of a code span around the text
]
# letters the reversal models know: their output is the input reversed, so payload markup can
# only come back out of a model as characters; the GPT models know every printable ASCII character
LETTERS = "imgsrcxclassxssonerroralert"
PAGES = ["" if page == "home" else page for page in fuzz.PAGES]
FIELDS = {
    "gpt": 1,
    "reversal": 2,
    "compare": 1,
    "bert": 1,
    "heads": 5,
    "variance": 1,
    "basics": 1,
    "cost": 1,
}  # text fields
ROUTER_KEYS = ["tour", "scene", "follow", "present"]  # read by app/Home.py on every page

# everything that would show a payload became markup or a live link, in the page, every shadow root
# (the charts) and every frame; the sentinel's record and the title say whether anything ran
FOUND = inline("""() => {
    const roots = (r) => [r, ...[...r.querySelectorAll('*')].filter((e) => e.shadowRoot)
        .flatMap((e) => roots(e.shadowRoot))];
    const bad = [], around = (e) => (e.closest(part("any_part"))?.innerText || '').slice(0, 160);
    for (const r of roots(document)) {
        const markup = '.xss, [onerror], [onload], [onmouseover], iframe[srcdoc], img[src="x"]';
        for (const e of r.querySelectorAll(markup))
            bad.push(`${e.outerHTML.slice(0, 160)} in ${around(e)}`);
        for (const s of r.querySelectorAll('script'))
            if (/alert\\(|__xss/.test(s.textContent)) bad.push(s.outerHTML.slice(0, 160));
        for (const a of r.querySelectorAll('[href], [src], [action], [formaction]'))
            for (const name of ['href', 'src', 'action', 'formaction'])
                if (/^\\s*javascript:/i.test(a.getAttribute(name) || '')) bad.push(a.outerHTML.slice(0, 160));
    }
    return {ran: window.__xss || [], bad, title: document.title};
}""")


def url_keys(page: str) -> list[str]:
    """The URL parameters the page's source reads: its URL_KEYS, the keys it seeds from the URL
    (DEFAULTS, init_state's dict) and any st.query_params it reads by name."""
    source = (ROOT / "app" / "views" / f"{page or 'home'}.py").read_text()
    keys: set[str] = set(re.findall(r"query_params(?:\.get\(|\[)\"(\w+)\"", source))
    keys |= set(re.findall(r"\"(\w+)\" in st\.query_params", source))
    for node in ast.walk(ast.parse(source)):
        named = isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in ("URL_KEYS", "DEFAULTS") for t in node.targets
        )
        seeded = isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == (
            "init_state"
        )
        values = [node.value] if named else node.args[:1] if seeded else []
        for value in values:
            found = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", [])
            keys |= {k.value for k in found if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return sorted(keys)


def assert_clean(page: Page, where: str) -> None:
    """Nothing ran and no payload became markup or a script link, in any frame; no exception shown."""
    for frame in page.frames:
        found = frame.evaluate(FOUND)
        assert not found["ran"], f"{where}: script ran: {found['ran']}"
        assert not found["bad"], f"{where}: payload markup in the page: {found['bad']}"
        assert "xss" not in found["title"], f"{where}: the title was set: {found['title']}"
    assert_no_exception(page)


@pytest.fixture(scope="module")
def page(browser: Browser) -> Iterator[Page]:
    """One browser context for the whole module, the sentinel in place before any page script."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(SENTINEL)
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()


def hover_charts(page: Page, where: str) -> None:
    """Hover the middle of each drawn chart and open its table view, so tips and tables render."""
    charts = page.locator(".lab-chart[data-drawn]")
    for i in range(min(charts.count(), 6)):
        chart = charts.nth(i)
        chart.scroll_into_view_if_needed()
        chart.locator("canvas").hover()
        chart.locator(".table-button").click()
    assert_clean(page, f"{where} charts")


def open_expanders(page: Page) -> None:
    """Open the page's closed expanders: fields inside them are typed into too."""
    closed = page.locator(f"{part('main')} details:not([open]) > summary")
    for _ in range(20):
        if not closed.count():
            return
        closed.first.click()


def fill_fields(page: Page, name: str) -> int:
    """Type a payload into every visible text field of the page (Enter, or Ctrl+Enter in a text
    area) and check after each rerun; the number of fields typed into."""
    where = f"/{name}"
    main = page.locator(part("main"))
    boxes = main.locator("input[type=text]:not([role=combobox]), textarea")
    if name in FIELDS:  # the page may still be drawing its later parts
        boxes.nth(FIELDS[name] - 1).wait_for(state="attached", timeout=30_000)
    open_expanders(page)
    labels = [label for box in boxes.all() if box.is_visible() and (label := box.get_attribute("aria-label"))]
    for i, label in enumerate(labels):
        payload = PAYLOADS[i % len(PAYLOADS)] if "a–z" not in label else LETTERS + PAYLOADS[0]
        box = main.get_by_label(label, exact=True).first
        if not box.is_visible():  # the previous payload stopped the page before this field
            page.reload()
            wait_for_app(page)
            open_expanders(page)
        box.fill(payload)
        box.press("Control+Enter" if box.evaluate("e => e.tagName") == "TEXTAREA" else "Enter")
        wait_for_app(page)
        assert_clean(page, f"{where} field {label!r}")
    return len(labels)


@pytest.mark.parametrize("shift", [0, 1, None])
def test_url_parameters_of_every_page(page: Page, app_url: str, shift: int | None) -> None:
    """Every parameter each page reads, a payload each: the two Markdown payloads (a notice may
    cut a value to its first 20 characters), each key both; then the markup ones, and the charts'
    tips and tables."""
    for name in PAGES:
        keys = url_keys(name) + ROUTER_KEYS
        if shift is None:
            query = {k: PAYLOADS[i % len(PAYLOADS)] for i, k in enumerate(keys)}
        else:
            query = {k: PAYLOADS[-1 - (i + shift) % 2] for i, k in enumerate(keys)}
        page.goto(f"{app_url}/{name}?{urlencode(query)}")
        wait_for_app(page)
        assert_clean(page, f"/{name} {query}")
        if shift is None:
            hover_charts(page, f"/{name}")


def test_text_fields_of_every_page(page: Page, app_url: str) -> None:
    typed = {}
    for name in PAGES:
        page.goto(f"{app_url}/{name}")
        wait_for_app(page)
        typed[name] = fill_fields(page, name)
        hover_charts(page, f"/{name} after typing")
    assert typed == {name: FIELDS.get(name, 0) for name in PAGES}, typed


def test_corpus_upload_and_a_tour(page: Page, app_url: str, tmp_path: Path) -> None:
    page.goto(f"{app_url}/train")
    wait_for_app(page)
    main = page.locator(part("main"))
    main.get_by_text("Character language model (GPT)").click()  # the task that takes a corpus
    wait_for_app(page)
    uploader = main.locator(part("file_drop"))
    for k, content in enumerate(["\n".join(PAYLOADS * 20), PAYLOADS[1]]):  # accepted, then refused
        name = f"{PAYLOADS[k]}.txt"
        uploader.set_input_files(files=[{"name": name, "mimeType": "text/plain", "buffer": content.encode()}])
        wait_for_app(page)
        expect(main).to_contain_text("need at least 100" if k else "distinct")
        assert_clean(page, f"/train upload {name!r}")

    for scene in PAYLOADS[-2:]:  # a starter tour, a scene number that is not one
        page.goto(f"{app_url}/?{urlencode({'tour': 'seed-chapters', 'scene': scene})}")
        wait_for_app(page)
        expect(main).to_contain_text("is not a number")
        assert_clean(page, f"tour scene {scene!r}")

    # a recorded tour: its title and each scene's note are shown in the tour bar
    page.goto(f"{app_url}/reversal?{urlencode({'text': PAYLOADS[0]})}")
    wait_for_app(page)
    sidebar = page.locator(part("sidebar"))
    sidebar.get_by_text("Record a tour").click()
    sidebar.get_by_label("Note for this view").fill(PAYLOADS[0] + PAYLOADS[2])
    sidebar.get_by_role("button", name="Add this view to the tour").click()
    wait_for_app(page)
    sidebar.get_by_label("Tour title").fill(PAYLOADS[3])
    sidebar.get_by_label("Tour title").press("Enter")
    wait_for_app(page)
    sidebar.get_by_role("button", name="Save the tour").click()
    wait_for_app(page)
    link = sidebar.locator(part("code")).inner_text().strip()
    assert link.startswith("?tour="), link
    page.goto(f"{app_url}/{link}")
    wait_for_app(page)
    expect(main.locator(f'{keyed("tour_bar")} [role="status"]')).to_contain_text("scene 1 of 1")
    page.screenshot(path=str(tmp_path / "tour-bar.png"))
    assert_clean(page, "a tour with a payload title and note")
