"""Issue 43, the lecture polished, in Chromium: at 1280x720 light in projector mode (the
lecturer) and at 390x844 dark with touch and the keyboard (a student's phone). The starter
tours walked scene by scene with the arrow keys, each scene's key charts on the screen below
the tour bar; /reversal's large map labelled in full; trained lengths said; /compare on the
lesson head; only accepted input in the URL; phones; and no request that leaves the box or fails.
Screenshots of each step are saved under the test's tmp_path."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Browser, Page, expect

from attention_lab.frame.streamlit_dom import inline, keyed, part
from attention_lab.lecture import tours
from tests.support.browser import assert_no_exception, chart, chart_cells, open_page, params, wait_for_app

ROOT = Path(__file__).resolve().parents[2]
PROJECTOR = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}
REVERSAL_INPUT = "Text to reverse (letters a–z, at most 30)"


@pytest.fixture
def projector(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=PROJECTOR, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(90_000)
    yield page
    context.close()


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=PHONE, color_scheme="dark", has_touch=True)
    page = context.new_page()
    page.set_default_timeout(90_000)
    yield page
    context.close()


# In the page: every key chart (a chart's element, or a table) wholly between the tour bar (or
# the header) and the bottom of the window; the boxes as [key, top, bottom, bar bottom]. Its
# argument: [key, its element's selector] pairs.
KEYS_ON_SCREEN = inline("""(keys) => {
  const bar = document.querySelector(keyed("tour_bar"))?.getBoundingClientRect().bottom
    || document.querySelector(part("header")).getBoundingClientRect().bottom;
  const boxes = keys.map(([k, selector]) => {
    const e = document.querySelector(`${selector}, .lab-table[data-key="${k}"]`);
    const b = e && e.getBoundingClientRect();
    return b ? [k, b.top, b.bottom, bar] : [k, null, null, bar];
  });
  const ok = boxes.every(([, top, bottom]) => top !== null && top >= bar - 1 && bottom <= innerHeight + 1);
  return ok ? boxes : false;
}""")


def key_charts_on_screen(page: Page, keys: tuple[str, ...]) -> list[list[object]]:
    """Wait (the scene's script scrolls once the run is over) until every key chart is on screen."""
    pairs = [[key, keyed(key)] for key in keys]
    try:
        return page.wait_for_function(KEYS_ON_SCREEN, arg=pairs, timeout=30_000).json_value()
    except Exception:  # noqa: BLE001  (say where they are instead of a bare timeout)
        where = page.evaluate(KEYS_ON_SCREEN.replace("return ok ? boxes : false;", "return boxes;"), pairs)
        raise AssertionError(f"key charts not on the screen: {where}") from None


def press_until(page: Page, key: str, url: re.Pattern[str]) -> None:
    """Press `key` with nothing focused until the URL matches (a press that lands while the page
    still runs may come before its shortcuts are bound)."""
    for _ in range(3):
        wait_for_app(page)
        page.locator("body").press(key)
        try:
            expect(page).to_have_url(url, timeout=15_000)
            return
        except AssertionError:
            continue
    expect(page).to_have_url(url, timeout=15_000)


# ---------------------------------------------------------------- 1 the starter tours, projected


@pytest.mark.parametrize("tour", ["chapter-004", "seed-chapters"])
def test_a_starter_tour_walked_with_the_arrow_keys_shows_each_key_chart(
    projector: Page, app_url: str, tmp_path: Path, tour: str
) -> None:
    """Every scene fits one projected 1280x720 screen: its key charts lie wholly between the
    slim tour bar and the bottom of the window; the bar stays under the header."""
    scenes = json.loads((ROOT / "app" / "tours" / f"{tour}.json").read_text())["scenes"]
    open_page(projector, f"{app_url}/?tour={tour}&present=1")
    for k in range(1, len(scenes) + 1):
        if k > 1:
            press_until(projector, "ArrowRight", re.compile(rf"scene={k}\b"))
        expect(projector).to_have_url(re.compile(rf"/{scenes[k - 1]['page']}\?.*scene={k}\b"), timeout=30_000)
        wait_for_app(projector)
        assert_no_exception(projector)
        keys = tours.key_charts(tour, k)
        boxes = key_charts_on_screen(projector, keys)
        projector.screenshot(path=str(tmp_path / f"{tour}-scene-{k}.png"))
        bar = projector.locator(keyed("tour_bar")).bounding_box()
        assert bar is not None and bar["height"] <= 70, bar  # slim: one line of buttons, two of note
        assert all(b[1] >= bar["y"] + bar["height"] - 1 for b in boxes), boxes
    press_until(projector, "ArrowLeft", re.compile(rf"scene={len(scenes) - 1}\b"))
    assert params(projector)["present"] == "1"


# ---------------------------------------------------------------- 2 the projected large map


@pytest.mark.parametrize(
    ("checkpoint", "text"),
    [("reverse-sinusoidal", "attention"), ("reverse-alibi", "abcdefghijkl")],  # alibi writes 11 of 12 letters
)
def test_the_projected_large_map_labels_every_row_and_column(
    projector: Page, app_url: str, tmp_path: Path, checkpoint: str, text: str
) -> None:
    open_page(projector, f"{app_url}/reversal?checkpoint={checkpoint}&text={text}&present=1")
    head = chart(projector, "rev_cross_head")
    box = head.bounding_box()
    assert box is not None and box["height"] >= 0.6 * PROJECTOR["height"], box
    assert box["y"] >= 0 and box["y"] + box["height"] <= PROJECTOR["height"], box
    grid = chart(projector, "rev_cross_grid").bounding_box()
    assert grid is not None and grid["y"] + grid["height"] <= PROJECTOR["height"], grid
    labelled = json.loads(head.get_attribute("data-labelled") or "{}")
    rows, columns = labelled["rows"], labelled["columns"]
    assert rows[0] == rows[1] and columns[0] == columns[1], labelled  # every one carries its label
    assert columns[1] == len(text) + 1  # the letters and <eos>
    projector.screenshot(path=str(tmp_path / f"present-{text}.png"))


# ---------------------------------------------------------------- 3 trained lengths


def test_the_trained_lengths_are_said_beside_the_result_in_the_help_and_the_table(
    projector: Page, app_url: str, tmp_path: Path
) -> None:
    open_page(projector, f"{app_url}/reversal?checkpoint=reverse-rope&text=transformer&present=1")
    said = projector.get_by_text(re.compile(r"This model was trained on 3–10 letters; this input has 11"))
    expect(said).to_be_in_viewport()
    projector.get_by_role("button", name=f"Help for {REVERSAL_INPUT}").hover()
    expect(projector.get_by_text(re.compile("trained on words of 3–10 letters"))).to_be_visible()
    projector.screenshot(path=str(tmp_path / "trained-lengths-reversal.png"))
    open_page(projector, f"{app_url}/train")
    table = projector.locator('.lab-table[data-key="length_table"]')
    table.scroll_into_view_if_needed()
    headers = table.locator("thead th").all_inner_texts()
    assert "len 10 (trained)" in headers and "len 12 (never seen)" in headers, headers
    projector.screenshot(path=str(tmp_path / "trained-lengths-table.png"))


# ---------------------------------------------------------------- 4 /compare on the lesson head


def test_compare_opens_on_the_lesson_head_with_scores_on_both_grids(
    projector: Page, app_url: str, tmp_path: Path
) -> None:
    open_page(projector, f"{app_url}/reversal?checkpoint=reverse-rope&text=attention&present=1")
    best = (params(projector)["layer"], params(projector)["head"])
    open_page(projector, f"{app_url}/compare?a=reverse-rope&b=reverse-none&text=attention&present=1")
    assert (params(projector)["layer"], params(projector)["head"]) == best
    for key in ("cmp_a_grid", "cmp_b_grid"):
        titles = chart(projector, key).evaluate("e => e.__spec.panels.map((p) => p.title)")
        assert all(re.fullmatch(r"L\d H\d · \d\.\d\d( · Δ\d\.\d\d)?", t) for t in titles), titles
    projector.screenshot(path=str(tmp_path / "compare-lesson-head.png"))


# ---------------------------------------------------------------- 5 accepted input, positions in words


def test_only_accepted_input_reaches_the_url_and_positions_are_named(
    phone: Page, app_url: str, tmp_path: Path
) -> None:
    open_page(phone, f"{app_url}/reversal?checkpoint=reverse-sinusoidal&text={'x' * 2000}")
    expect(phone.get_by_text(re.compile("The input has 2000 characters"))).to_be_visible()
    assert "text" not in params(phone)
    box = phone.get_by_role("textbox", name=REVERSAL_INPUT, exact=True)
    box.fill("hello")
    box.press("Enter")
    phone.wait_for_function("() => new URLSearchParams(location.search).get('text') === 'hello'")
    wait_for_app(phone)
    box.fill("y" * 40)
    box.press("Enter")
    expect(phone.get_by_text(re.compile("The input has 40 characters"))).to_be_visible()
    assert params(phone)["text"] == "hello"  # the last accepted one
    phone.screenshot(path=str(tmp_path / "refused-input.png"))
    open_page(phone, f"{app_url}/gpt?text=The%20with%20statement&query=-5")
    notice = phone.get_by_text(re.compile(r"query=-5.*the last character"))
    notice.scroll_into_view_if_needed()
    expect(notice).to_be_visible()
    assert "showing -1" not in phone.locator(part("main")).inner_text()
    phone.screenshot(path=str(tmp_path / "query-notice.png"))


# ---------------------------------------------------------------- 6 phones: keyboard, first screen, taps

FOCUS = inline("""() => {
  const e = document.activeElement, box = e.getBoundingClientRect();
  return {inSidebar: !!e.closest(part("sidebar")), left: box.left, right: box.right,
          name: e.getAttribute('aria-label') || e.innerText?.slice(0, 40) || e.tagName};
}""")


def test_a_collapsed_sidebar_leaves_the_tab_order_on_a_phone(
    phone: Page, app_url: str, tmp_path: Path
) -> None:
    """Tab from the top of the page: the collapsed sidebar's controls (off the screen to the
    left) are skipped; opened, they are reached again."""
    open_page(phone, f"{app_url}/reversal?checkpoint=reverse-sinusoidal&text=attention")
    sidebar = phone.locator(part("sidebar"))
    expect(phone.locator(part("collapsed_sidebar"))).to_have_count(1)
    expect(sidebar).to_be_hidden()  # once its slide out is over (0.3 s), out of the tab order

    def tab_through(presses: int, key: str = "Tab") -> list[dict[str, object]]:
        focused = []
        for _ in range(presses):
            phone.keyboard.press(key)
            focused.append(phone.evaluate(FOCUS))
        return focused

    focused = tab_through(8)
    assert not [f for f in focused if f["inSidebar"] or f["right"] <= 0], focused
    assert "Expand sidebar" in [f["name"] for f in focused], focused
    assert any(f["name"] == REVERSAL_INPUT for f in focused), focused  # the page's own controls come next
    phone.screenshot(path=str(tmp_path / "phone-sidebar-collapsed.png"))
    phone.locator(part("expand_sidebar")).click()
    expect(phone.locator(part("open_sidebar"))).to_have_count(1)
    phone.wait_for_timeout(500)  # its slide in
    back = tab_through(4, "Shift+Tab")  # from the button that opened it: the sidebar comes before it
    assert any(f["inSidebar"] for f in back), back  # open, its controls are reached again
    phone.screenshot(path=str(tmp_path / "phone-sidebar-open.png"))


@pytest.mark.parametrize(
    ("path", "field", "first_chart"),
    [
        ("/reversal?checkpoint=reverse-sinusoidal&text=attention", REVERSAL_INPUT, "rev_cross_grid"),
        ("/gpt", "Prompt", "gpt_self_grid"),
    ],
)
def test_a_phones_first_screen_shows_the_input_and_the_first_chart(
    phone: Page, app_url: str, tmp_path: Path, path: str, field: str, first_chart: str
) -> None:
    open_page(phone, app_url + path)
    expect(phone.get_by_role("textbox", name=field, exact=True)).to_be_in_viewport(ratio=1)
    box = chart(phone, first_chart).bounding_box()
    assert box is not None and box["y"] + 200 <= PHONE["height"], box  # its title and first row of maps
    cells = chart_cells(phone, first_chart)
    first_row = [c for c in cells if c[0] == 0]
    assert first_row and all(box["y"] + c[3] + c[5] <= PHONE["height"] for c in first_row), (box, first_row)
    phone.screenshot(path=str(tmp_path / f"phone-first-screen-{first_chart}.png"))


def test_projected_on_a_phone_the_switches_stack_without_wide_gaps(
    phone: Page, app_url: str, tmp_path: Path
) -> None:
    """Projector mode's row of three switches under /reversal's inputs wraps on a phone: one under
    the other at the type's spacing (the row's 4rem gap had left 76 px of nothing between them)."""
    open_page(phone, app_url + "/reversal?checkpoint=reverse-sinusoidal&text=attention&present=1")
    names = ("Drop positional information", "Decoder causal mask off", "Padding mask off")
    boxes = [phone.get_by_role("switch", name=name).locator("xpath=../..").bounding_box() for name in names]
    assert all(boxes), boxes
    tops = [b["y"] for b in boxes if b]
    gaps = [b - a for a, b in zip(tops, tops[1:], strict=False)]
    assert len(gaps) == 2 and all(28 <= g <= 28 + 0.6 * 19 + 2 for g in gaps), gaps  # 28 px, then 0.6rem
    phone.screenshot(path=str(tmp_path / "phone-projected-switches.png"))
    assert_no_exception(phone)


def test_a_tap_on_a_small_map_brings_the_large_map_into_view(
    phone: Page, app_url: str, tmp_path: Path
) -> None:
    open_page(phone, f"{app_url}/reversal?checkpoint=reverse-sinusoidal&text=attention&layer=1&head=2")
    canvas = chart(phone, "rev_cross_grid").locator("canvas")
    canvas.scroll_into_view_if_needed()
    large = chart(phone, "rev_cross_head")
    expect(large).not_to_be_in_viewport(ratio=0.95)  # under the grid and the selectors, out of view
    x, y, w, h = next(c[2:] for c in chart_cells(phone, "rev_cross_grid") if c[:2] == [0, 1])
    canvas.tap(position={"x": x + w / 2, "y": y + h / 2})
    phone.wait_for_function("() => new URLSearchParams(location.search).get('head') === '1'")
    wait_for_app(phone)
    expect(large.locator("canvas")).to_have_attribute("aria-label", re.compile("Layer 0 head 1"))
    expect(large).to_be_in_viewport(ratio=0.95)
    phone.screenshot(path=str(tmp_path / "phone-tap-large-map.png"))


# ---------------------------------------------------------------- 7 no request leaves the box, none fails

PAGES = ["/", "/reversal?text=attention", "/compare?a=reverse-rope&b=reverse-none&text=attention", "/train"]


def requests_while_opening(page: Page, app_url: str, paths: list[str]) -> tuple[list[str], list[str]]:
    """(requests to another host than the app's, responses of 400 and more) while opening `paths`."""
    origin = urlparse(app_url).netloc
    elsewhere: list[str] = []
    failed: list[str] = []

    def asked(request: object) -> None:
        url = urlparse(request.url)  # type: ignore[attr-defined]
        inner = urlparse(url.path) if url.scheme == "blob" else url  # blob:http://host/... is the page's own
        if url.scheme != "data" and inner.netloc != origin:
            elsewhere.append(request.url)  # type: ignore[attr-defined]

    page.on("request", asked)
    page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
    page.on("requestfailed", lambda r: failed.append(f"failed {r.url}"))
    for path in paths:
        open_page(page, app_url + path)
        page.wait_for_timeout(1500)  # icons and late fetches
    return elsewhere, failed


@pytest.mark.parametrize("size", [PROJECTOR, PHONE], ids=["1280x720", "390x844"])
def test_no_request_leaves_the_box(browser: Browser, app_url: str, size: dict[str, int]) -> None:
    context = browser.new_context(viewport=size, color_scheme="dark" if size == PHONE else "light")
    try:
        elsewhere, _ = requests_while_opening(context.new_page(), app_url, PAGES)
    finally:
        context.close()
    assert not elsewhere, elsewhere


def test_no_request_fails(browser: Browser, app_url: str) -> None:
    context = browser.new_context(viewport=PROJECTOR)
    try:
        _, failed = requests_while_opening(context.new_page(), app_url, PAGES)
    finally:
        context.close()
    assert failed == []
