"""The lab outside Streamlit, in Chromium: a view kept as one HTML file opens from file:// with
the network off (every chart drawn, hover reads a value, a head click opens it, the walk steps,
the keyboard alone works, axe finds nothing serious) at 1280 and 390 px, light and dark; and the
widget in a real JupyterLab: run all, the canvases are drawn, a click on a head opens it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from attention_lab.notebook import show
from attention_lab.testing.servers import running_jupyterlab

ROOT = Path(__file__).resolve().parents[2]
DESKTOP, PHONE = {"width": 1280, "height": 720}, {"width": 390, "height": 844}
DRAWN = "n => document.querySelectorAll('.lab-chart[data-drawn]').length >= n"
#: the share of a canvas's pixels that are not its most common colour (the background)
INKED = """c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const first = d.slice(0, 4).join(); let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d.slice(i, i + 4).join() !== first) n++;
  return n / (d.length / 4); }"""


def cells(page: Page, root: str) -> list[list[int]]:
    return page.evaluate(f"JSON.parse(document.querySelectorAll('.lab-chart')[{root}].dataset.cells)")


def click_head(page: Page, index: int, layer: int, head: int) -> None:
    """Click the middle of one head's panel of the index-th chart (a grid)."""
    x, y, w, h = next(c[2:] for c in cells(page, str(index)) if c[:2] == [layer, head])
    canvas = page.locator(".lab-chart canvas").nth(index)
    canvas.scroll_into_view_if_needed()
    canvas.click(position={"x": x + w / 2, "y": y + h / 2})


def opened(page: Page, title: str) -> None:
    """Wait until the head view (the second chart) draws the head titled `title`."""
    page.wait_for_function(
        "t => document.querySelectorAll('.lab-chart canvas')[1].ariaLabel.startsWith(t)", arg=title
    )


def label(page: Page, index: int) -> str:
    return page.locator(".lab-chart canvas").nth(index).get_attribute("aria-label") or ""


@pytest.fixture(scope="module")
def view_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("offline")
    return show("gpt-rope", "The with statement", layer=1, head=2).to_html(folder / "view.html")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280", "390"])
def test_an_offline_view_works_from_file_with_the_network_off(
    browser: Browser, view_file: Path, tmp_path: Path, scheme: str, size: dict
) -> None:
    context = browser.new_context(viewport=size, color_scheme=scheme, offline=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: errors.append(f"request {r.url}"))
    try:
        page.goto(view_file.as_uri())
        page.wait_for_function(DRAWN, arg=3)
        assert page.locator(".lab-chart").count() == 8  # grid, head, six walk steps
        assert label(page, 1).startswith("Layer 1 head 2")
        assert page.evaluate(INKED, page.locator(".lab-chart canvas").first.element_handle()) > 0.2
        # hover: a cell of the large head names its query, key and weight
        head = page.locator(".lab-chart canvas").nth(1)
        head.scroll_into_view_if_needed()
        box = head.bounding_box()
        head.hover(position={"x": box["width"] * 0.5, "y": box["height"] * 0.6})
        tip = page.locator(".lab-chart .tip").nth(1)
        assert tip.is_visible() and "weight" in tip.inner_text()
        # a click on head 3.1 in the grid draws it large
        click_head(page, 0, 3, 1)
        opened(page, "Layer 3 head 1")
        # the walk: Next step shows step 2
        page.get_by_role("button", name="Next step ▶").click()
        assert page.locator(".lab-where").first.inner_text() == "2 of 6"
        page.screenshot(path=str(tmp_path / f"offline-{scheme}-{size['width']}.png"), full_page=True)
        result = Axe().run(page, options={"runOnly": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]})
        serious = [v["id"] for v in result.response["violations"] if v["impact"] in ("serious", "critical")]
        assert not serious, serious
        assert not errors, errors
    finally:
        context.close()


def test_an_offline_view_works_from_the_keyboard_alone(browser: Browser, view_file: Path) -> None:
    """Tab reaches the grid; arrows move over heads and read them; Enter opens one."""
    context = browser.new_context(viewport=DESKTOP, offline=True)
    page = context.new_page()
    try:
        page.goto(view_file.as_uri())
        page.wait_for_function(DRAWN, arg=3)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.tagName") == "CANVAS"
        page.keyboard.press("ArrowRight")  # the first arrow lands on the first head
        expect(page.locator(".lab-chart .live").first).to_contain_text("layer 0 head 0,")
        page.keyboard.press("ArrowRight")
        expect(page.locator(".lab-chart .live").first).to_contain_text("layer 0 head 1,")
        page.keyboard.press("Enter")
        opened(page, "Layer 0 head 1")
    finally:
        context.close()


def test_the_widget_draws_in_jupyterlab_and_a_click_opens_a_head(browser: Browser, tmp_path: Path) -> None:
    """A real JupyterLab and kernel: open the researcher's notebook, run all; the widget's
    canvases are drawn (not blank); a click on a head in the grid opens it in the head view
    (through the kernel); the grid takes keyboard focus."""
    shutil.copy(ROOT / "docs" / "notebooks" / "researcher-walk.ipynb", tmp_path / "walk.ipynb")
    with running_jupyterlab(tmp_path) as url:
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        page.set_default_timeout(120_000)
        try:
            page.goto(url.format(path="walk.ipynb"))
            page.wait_for_selector(".jp-Notebook .jp-Cell")
            expect(page.get_by_text("Python 3 (ipykernel) | Idle")).to_be_visible(
                timeout=120_000
            )  # kernel ready
            page.get_by_role("menuitem", name="Run").click()
            page.locator("[data-command='runmenu:run-all']").click()
            page.wait_for_function(DRAWN, arg=3)  # the first view: grid, head, walk
            grid = page.locator(".lab-chart canvas").first
            assert page.evaluate(INKED, grid.element_handle()) > 0.2
            assert label(page, 1).startswith("Layer 1 head 1")
            click_head(page, 0, 0, 3)
            opened(page, "Layer 0 head 3")
            grid.focus()
            assert page.evaluate("document.activeElement.tagName") == "CANVAS"
        finally:
            page.screenshot(path=str(tmp_path / "jupyterlab.png"))
            context.close()
