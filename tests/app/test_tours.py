"""Issue 23, tours: the starter tour opens by link and steps scene by scene through six
pages with Previous / Next; a bad scene number or an unknown tour is named; a tour recorded
from the pages is saved and opens by its link."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def open_home(query: dict[str, str], runs: Path) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    return at


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path))
    return tmp_path


def scene_lines(at: AppTest) -> list[str]:
    """The tour bar's scene line: an HTML live region (a screen reader reads each new one)."""
    bodies = [e.proto.body for e in at.get("html")]
    return [b for b in bodies if b.startswith('<div role="status" aria-live="polite"')]


def scene_line(at: AppTest) -> str:
    return next(b for b in scene_lines(at) if " of 6</strong>" in b)


def test_the_starter_tour_steps_through_its_scenes(runs: Path) -> None:
    at = open_home({"tour": "seed-chapters"}, runs)
    assert not at.exception, [e.value for e in at.exception]
    assert "scene 1 of 6</strong>: Queries, keys and values by hand" in scene_line(at)
    assert at.query_params["tour"] in ("seed-chapters", ["seed-chapters"])
    pages = []
    for k in range(2, 7):
        at.button(key="tour_next").click().run()
        assert not at.exception, (k, [e.value for e in at.exception])
        assert f"scene {k} of 6" in scene_line(at)
        assert at.query_params["scene"] in (str(k), [str(k)])
        pages.append(at.title[0].value)
    assert pages == [
        "Positional encodings",
        "Why divide by √d_k",
        "Reversal explorer",
        "GPT explorer",
        "GPT explorer",
    ]
    assert at.selectbox(key="gpt_checkpoint").value == "gpt-induction"  # the scene's view, not the last one's
    assert (at.selectbox(key="gpt_layer").value, at.selectbox(key="gpt_head").value) == (1, 1)
    assert at.button(key="tour_next").disabled
    at.button(key="tour_prev").click().run()
    assert "scene 5 of 6" in scene_line(at)
    assert at.selectbox(key="gpt_checkpoint").value == "gpt-sinusoidal"
    at.button(key="tour_leave").click().run()
    assert not any("scene " in m.value for m in at.markdown) and "tour" not in at.query_params


def test_bad_tour_links_are_named(runs: Path) -> None:
    at = open_home({"tour": "seed-chapters", "scene": "99"}, runs)
    assert any("this tour has scenes 1 to 6" in i.value for i in at.info)
    assert "scene 1 of 6" in scene_line(at)
    at = open_home({"tour": "no-such-tour"}, runs)
    assert any("This tour cannot be opened: no tour named 'no-such-tour'" in e.value for e in at.error)
    assert not at.exception


def test_a_tour_recorded_from_the_pages_opens_by_its_link(runs: Path) -> None:
    at = open_home({}, runs)
    at.switch_page("views/reversal.py")
    at.query_params["text"] = "hello"
    at.run()
    at.text_input(key="tour_note").input("first, reversal")
    [add] = [b for b in at.button if b.label == "Add this view to the tour"]
    add.click().run()
    at.switch_page("views/basics.py").run()
    [add] = [b for b in at.button if b.label == "Add this view to the tour"]
    add.click().run()
    at.text_input(key="tour_title").input("my <b>tour</b>").run()
    [save] = [b for b in at.button if b.label == "Save the tour"]
    save.click().run()
    link = next(c.value for c in at.code if c.value.startswith("?tour=tour-"))
    tour_id = link.split("=")[1].split("&")[0]
    again = open_home({"tour": tour_id}, runs)
    assert not again.exception
    # a title or note is text: its markup is shown, never made (the page escapes it)
    assert "my &lt;b&gt;tour&lt;/b&gt; · scene 1 of 2</strong>: first, reversal" in scene_lines(again)[0]
    assert again.text_input(key="rev_text").value == "hello"
