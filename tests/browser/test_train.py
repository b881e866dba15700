"""/train in a real browser: start a run, leave the page and come back, stop it; the run's
link opens it in another browser context; an unknown id shows a notice."""

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import Browser, Page, expect

from attention_lab.frame.streamlit_dom import inline, part
from attention_lab.serving import new_run_id
from tests.support.browser import assert_no_exception, chart, open_page, wait_for_app


def test_start_navigate_away_stop_and_open_by_link(
    page: Page, browser: Browser, app_url: str, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, app_url + "/train", tmp_path / "train-open.png")
    steps = page.get_by_label("Steps")
    if not steps.is_visible():
        page.get_by_text("Model shape and optimiser").click()
    steps.fill("10000")
    steps.press("Enter")
    wait_for_app(page)
    page.locator(part("main")).get_by_role("button", name="Start").click()
    progress = page.locator(part("progress"))
    expect(progress).to_contain_text("running", timeout=90_000)
    chart(page, "train_loss_fig")  # the loss curve is drawn while the run trains
    page.screenshot(path=str(tmp_path / "train-running.png"))
    assert_no_exception(page)
    run_id = parse_qs(urlparse(page.url).query)["run"][0]
    assert run_id.startswith("run-") and len(run_id) >= 20

    page.get_by_role("link", name="Reversal explorer").click()
    wait_for_app(page)
    page.get_by_role("link", name="Train a model").click()
    expect(page.locator(part("progress"))).to_contain_text("running", timeout=30_000)
    if not page.get_by_label("Steps").is_visible():
        page.get_by_text("Model shape and optimiser").click()
    expect(page.get_by_label("Steps")).to_have_value("10000")  # settings survive the page change
    step_text = page.locator(part("progress")).inner_text()

    page.locator(part("main")).get_by_role("button", name="Stop").click()
    expect(page.locator(part("progress"))).to_contain_text("stopped", timeout=15_000)
    assert step_text != page.locator(part("progress")).inner_text()
    expect(page.get_by_text("is now a choice in the Reversal explorer")).to_be_visible(timeout=30_000)
    expect(page.get_by_text(f"/reversal?checkpoint={run_id}")).to_be_visible()
    page.screenshot(path=str(tmp_path / "train-stopped.png"))
    page.screenshot(path=str(tmp_path / "train-stopped-full.png"), full_page=True)
    assert_no_exception(page)

    # another browser (a new context: no cookies, no session) opens the run by its link
    other = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        fresh = other.new_page()
        fresh.set_default_timeout(60_000)
        open_page(fresh, f"{app_url}/reversal?checkpoint={run_id}", tmp_path / "reversal-by-link.png")
        main = fresh.locator(part("main"))
        picked = main.get_by_role("combobox", name="Checkpoint")
        expect(picked).to_have_value(re.compile(re.escape(run_id[:12])))  # the run is the chosen model
        expect(main).to_contain_text("trained for")
        expect(main.locator(part("error_alert"))).to_have_count(0)
        open_page(fresh, f"{app_url}/train?run={run_id}", tmp_path / "train-by-link.png")
        expect(fresh.locator(part("progress"))).to_contain_text("stopped")
    finally:
        other.close()


def test_an_induction_run_plots_every_heads_scores_and_opens_on_heads(
    page: Page, app_url: str, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, app_url + "/train")
    main = page.locator(part("main"))
    main.get_by_text("Induction heads: a random segment repeated").click()
    wait_for_app(page)
    size = main.get_by_role("slider").first  # the model size: small -> tiny
    size.focus()
    size.press("ArrowLeft")
    wait_for_app(page)
    if not page.get_by_label("Steps").is_visible():
        page.get_by_text("Model shape and optimiser").click()
    expect(page.get_by_role("spinbutton", name="layers")).to_have_value("2")
    expect(page.get_by_role("spinbutton", name="heads")).to_have_value("2")  # the tiny induction preset
    steps = page.get_by_label("Steps")
    steps.fill("400")
    steps.press("Enter")
    wait_for_app(page)
    main.get_by_role("button", name="Start").click()
    expect(main.get_by_text("Induction score of every head")).to_be_visible(timeout=90_000)
    main.get_by_text("Induction score of every head").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "train-induction-running.png"))
    assert_no_exception(page)
    expect(page.locator(part("progress"))).to_contain_text("done", timeout=180_000)
    wait_for_app(page)
    run_id = parse_qs(urlparse(page.url).query)["run"][0]
    for score in ("previous_token", "induction"):  # one line per head, L0 H0 .. L1 H1
        legend = json.loads(chart(page, f"train_{score}_fig").get_attribute("data-legend") or "[]")
        assert legend == ["L0 H0", "L0 H1", "L1 H0", "L1 H1"], legend
        # each curve named at its end too, in its own place (not by colour alone)
        drawn = chart(page, f"train_{score}_fig").evaluate("(root) => root.__drawn.labels")
        assert sorted(d["name"] for d in drawn) == legend
        ys = sorted(d["y"] for d in drawn)
        assert all(b - a >= 12 for a, b in zip(ys, ys[1:], strict=False)), ys
    main.get_by_text("Induction score of every head").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "train-induction-done.png"))
    scrubber = chart(page, "snap_fig")  # the scrubber over the snapshots
    scrubber.scroll_into_view_if_needed()
    title = scrubber.locator("canvas").get_attribute("aria-label") or ""
    assert re.match(r"step \d+: self layer \d+ head \d+", title), title
    page.screenshot(path=str(tmp_path / "train-induction-scrubber.png"))
    assert_no_exception(page)
    expect(main.get_by_text(f"/heads?checkpoint={run_id}")).to_be_visible()

    main.get_by_role("link", name="Read its heads on the Heads page").click()
    wait_for_app(page)
    expect(main.get_by_role("combobox", name="Checkpoint")).to_have_value(re.compile(re.escape(run_id[:12])))
    page.screenshot(path=str(tmp_path / "heads-induction-run.png"))
    assert_no_exception(page)


def test_an_unknown_run_id_shows_a_notice(page: Page, app_url: str) -> None:
    unknown = new_run_id()
    open_page(page, f"{app_url}/train?run={unknown}")
    expect(page.get_by_text("Unknown or expired run")).to_be_visible()
    open_page(page, f"{app_url}/reversal?checkpoint={unknown}")
    expect(page.get_by_text("cannot be opened")).to_be_visible()


SCRUBBER_JS = inline("""() => [...document.querySelectorAll(part("slider"))]
    .filter(s => s.innerText.includes('Snapshot'))
    .map(s => s.querySelector('input[type="range"]'))[0]""")


def scrubber_state(page: Page) -> tuple[int, int]:
    """(position, last position) of the snapshot scrubber: snapshot indices, read at once."""
    page.wait_for_function(f"() => ({SCRUBBER_JS})()")
    value, top = page.evaluate(
        f"() => {{ const t = ({SCRUBBER_JS})(); return [Number(t.value), Number(t.max)]; }}"
    )
    return value, top


def wait_until_following(page: Page) -> None:
    """Until the scrubber stands on the latest snapshot."""
    page.wait_for_function(
        f"""() => {{
            const t = ({SCRUBBER_JS})();
            return t && t.value === t.max;
        }}""",
        timeout=30_000,
    )


def wait_for_snapshots(page: Page, count: int) -> None:
    """Until the scrubber offers at least `count` snapshots (index count - 1)."""
    page.wait_for_function(
        f"""n => {{
            const t = ({SCRUBBER_JS})();
            return t && Number(t.max) >= n - 1;
        }}""",
        arg=count,
        timeout=120_000,
    )


def test_the_scrubber_holds_its_position_while_the_run_goes_on(
    page: Page, app_url: str, tmp_path: Path
) -> None:
    """Issue 11 #3: moving the scrubber or pausing holds it through refreshes that bring new
    snapshots; Follow latest plays again (the scrubber jumps to each newest snapshot)."""
    page.set_viewport_size({"width": 1280, "height": 720})
    open_page(page, app_url + "/train")
    main = page.locator(part("main"))
    size = main.get_by_role("slider").first  # the model size: small -> tiny
    size.focus()
    size.press("ArrowLeft")
    wait_for_app(page)
    if not page.get_by_label("Steps").is_visible():
        page.get_by_text("Model shape and optimiser").click()
    steps = page.get_by_label("Steps")
    steps.fill("1200")  # a snapshot every 30 steps
    steps.press("Enter")
    wait_for_app(page)
    main.get_by_role("button", name="Start").click()
    wait_for_snapshots(page, 3)
    thumb = main.locator(part("slider")).filter(has_text="Snapshot").get_by_role("slider")
    expect(main.get_by_role("button", name="Pause")).to_be_visible()
    wait_until_following(page)  # playing: the latest snapshot
    main.get_by_text("following the latest").scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "train-scrubber-playing.png"))

    follow = main.get_by_role("button", name="Follow latest")
    for _ in range(5):  # the user moves the scrubber back: it holds there
        thumb.focus()  # (a refresh that brings a snapshot replaces the scrubber: try again)
        thumb.press("ArrowLeft")
        try:
            expect(follow).to_be_visible(timeout=5_000)
            break
        except AssertionError:
            continue
    expect(follow).to_be_visible()
    held, top = scrubber_state(page)
    assert held < top
    wait_for_snapshots(page, top + 4)  # several refreshes, each with new snapshots
    assert scrubber_state(page)[0] == held
    expect(main.get_by_text(f"paused at snapshot {held + 1} of", exact=False)).to_be_visible()  # counts 1..n
    page.screenshot(path=str(tmp_path / "train-scrubber-paused.png"))
    assert_no_exception(page)

    main.get_by_role("button", name="Follow latest").click()  # play: follows again
    expect(main.get_by_role("button", name="Pause")).to_be_visible(timeout=30_000)
    _, top = scrubber_state(page)
    wait_for_snapshots(page, top + 3)
    wait_until_following(page)
    assert scrubber_state(page)[1] >= top + 2

    main.get_by_role("button", name="Pause").click()  # pause: holds the snapshot shown
    expect(main.get_by_role("button", name="Follow latest")).to_be_visible(timeout=30_000)
    held, top = scrubber_state(page)
    wait_for_snapshots(page, top + 3)
    assert scrubber_state(page)[0] == held
    assert_no_exception(page)
    stop = main.get_by_role("button", name="Stop")
    if stop.is_enabled():
        stop.click()
    expect(page.locator(part("progress"))).to_contain_text(re.compile("stopped|done"), timeout=30_000)
    wait_for_app(page)
    assert scrubber_state(page)[0] == held  # the ended run keeps the held snapshot

    # issue 23 #4: the ended run's scrubber plays its snapshots as a film, then stops on the last
    main.get_by_role("button", name="Play").click()
    expect(main.get_by_text("playing: snapshot", exact=False)).to_be_visible(timeout=30_000)
    first, top = scrubber_state(page)
    page.wait_for_function(  # the scrubber moves on by itself, one snapshot after another
        f"() => {{ const t = ({SCRUBBER_JS})(); return t && Number(t.value) > {first}; }}", timeout=30_000
    )
    page.screenshot(path=str(tmp_path / "train-scrubber-film.png"))
    expect(main.get_by_role("button", name="Play")).to_be_visible(timeout=(top - first + 10) * 3_000)
    assert scrubber_state(page) == (top, top)  # the film ends on the last snapshot
    assert_no_exception(page)
