"""The exploring class of benchmarks/bench_explore.py, short, against one real app process: every
page open sends input of its own (distinct links over every page of the mix, and the page's URL
then carries the drawn checkpoint and text), widget changes are BackMsgs the page takes, every
run finishes and draws no exception; the cProfile shim in that process (a sitecustomize.py on its
PYTHONPATH) files every run under its page, and the classifier splits a profile by module."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from attention_lab.frame.streamlit_private import RUN_PARTS, BackMsg
from attention_lab.testing.explore import (
    EXPLORE_MIX,
    Drawn,
    ExploreTally,
    Widget,
    explore,
    explore_link,
    shipped_models,
    widget_change,
)
from attention_lab.testing.profiling import (
    CLOCK_ENV,
    PROFILE_ENV,
    Profiles,
    category_of,
    clock_report,
    read_profiles,
    run_costs,
    split,
    write_sitecustomize,
)
from attention_lab.testing.servers import running_app
from tests.support.serve import in_own_loop

STUDENTS, OPENS, CHANGES, TIMEOUT = (0, 1, 2), 5, 2, 90.0
APP = Path(__file__).resolve().parents[2] / "app"


@pytest.fixture(scope="module")
def explored(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExploreTally, Profiles]:
    """Three students, five page opens each with two widget changes, on a profiled app process;
    what they did, and the profiles the process wrote as it stopped."""
    folder = tmp_path_factory.mktemp("explore")
    shim = write_sitecustomize(folder / "shim")
    models = shipped_models()
    with running_app(folder, {PROFILE_ENV: str(folder / "profiles")}, python_path=str(shim)) as url:
        stop_at = time.monotonic() + 600
        tally = in_own_loop(explore(url, models, STUDENTS, stop_at, CHANGES, TIMEOUT, max_pages=OPENS))
    return tally, read_profiles(folder / "profiles")


def page_of(link: str) -> str:
    return link.partition("?")[0]


def test_every_open_sends_input_of_its_own_over_the_mix(explored: tuple[ExploreTally, Profiles]) -> None:
    tally, _ = explored
    assert not tally.errors, tally.errors
    assert len(tally.links) == len(STUDENTS) * OPENS == len(tally.opens)
    assert len(set(tally.links)) == len(tally.links), Counter(tally.links).most_common(3)
    pages = {page_of(link) for link in tally.links}  # 15 seeded draws: the mix's pages, not all of them
    assert pages <= set(EXPLORE_MIX) and {"/gpt", "/reversal"} <= pages and len(pages) >= 3
    assert tally.explorer_opens and tally.echoed == tally.explorer_opens  # the page took the drawn input


def test_every_widget_change_is_a_run_the_page_takes(explored: tuple[ExploreTally, Profiles]) -> None:
    tally, _ = explored
    assert len(tally.changes) == len(tally.links) * CHANGES
    assert len(set(tally.changed)) > len(tally.changed) // 2, tally.changed
    assert tally.checkable >= len(tally.changes) // 2
    assert tally.applied == tally.checkable, tally.changed


def test_no_run_draws_an_exception(explored: tuple[ExploreTally, Profiles]) -> None:
    tally, _ = explored
    assert not tally.exceptions, tally.exceptions


def test_the_profile_files_every_run_under_its_page(explored: tuple[ExploreTally, Profiles]) -> None:
    tally, profiles = explored
    opens = Counter(page_of(link) for link in tally.links)
    assert {p: e.runs for p, e in profiles.pages.items()} == {p: n * (1 + CHANGES) for p, n in opens.items()}
    assert profiles.misfiled == 0
    parts = split(profiles.pages["/gpt"].stats().stats)  # type: ignore[attr-defined]
    assert min(parts["router"], parts["model"], parts["charts"], parts["page"]) > 0, parts
    assert profiles.loop is not None and all(e.messages > 0 for e in profiles.pages.values())


def test_a_widget_change_sends_every_widget_state_with_one_changed() -> None:
    head = Widget("$$ID-1-gpt_head", "string_value", "0", ("0", "1", "2"))
    switch = Widget("$$ID-2-gpt_nopos", "bool_value", False)
    text = Widget("$$ID-3-gpt_text", "string_value", "a")
    slider = Widget("$$ID-4-gpt_top_p", "double_array_value", [1.0], (), 0.05, 1.0, 0.05)
    drawn = Drawn({w.id: w for w in (head, switch, text, slider)}, query="text=a&head=0", page_hash="h")
    msg = BackMsg()
    msg.ParseFromString(widget_change("/gpt", drawn, head, "2"))
    run = msg.rerun_script
    assert (run.page_name, run.query_string, run.page_script_hash) == ("gpt", "text=a&head=0", "h")
    states = {s.id: s for s in run.widget_states.widgets}
    assert states[head.id].string_value == "2" and states[text.id].string_value == "a"
    assert states[switch.id].WhichOneof("value") == "bool_value" and not states[switch.id].bool_value
    assert list(states[slider.id].double_array_value.data) == [1.0]


def test_links_are_seeded_and_respect_each_model_and_page() -> None:
    import random

    models = shipped_models()
    first = [explore_link(random.Random("s-0"), models) for _ in range(3)]
    assert first == [explore_link(random.Random("s-0"), models) for _ in range(3)]
    rng = random.Random(1)
    links = [explore_link(rng, models) for _ in range(300)]
    shares = Counter(page_of(link) for link in links)
    total = sum(EXPLORE_MIX.values())
    for page, weight in EXPLORE_MIX.items():  # every page of the mix, near its share (300 draws)
        assert abs(shares[page] / 300 - weight / total) < 0.07, shares
    for link in links:
        page, _, query = link.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&"))
        if page == "/reversal":
            assert params["text"].isalpha() and params["text"].islower() and len(params["text"]) <= 10
        if page in ("/gpt", "/reversal"):
            model = next(m for m in models if m.name == params["checkpoint"])
            assert int(params["layer"]) < model.layers and int(params["head"]) < model.heads


def test_the_classifier_charges_library_time_to_the_part_that_called_it() -> None:
    home, view = (str(APP / "Home.py"), 1, "<module>"), (str(APP / "views" / "gpt.py"), 1, "<module>")
    element = ("/x/site-packages/pandas/io/formats/html.py", 5, "to_html")  # a library's code
    compute = (str(APP / "models" / "compute.py"), 9, "run_cached")
    matmul = ("~", 0, "<built-in method torch.matmul>")
    hashing = ("~", 0, "<method 'SerializeToString' of 'google._upb._message.Message' objects>")
    stats = {
        home: (1, 1, 0.1, 1.0, {}),
        element: (3, 3, 0.3, 0.4, {home: (1, 1, 0.1, 0.1), view: (2, 2, 0.2, 0.3)}),
        view: (1, 1, 0.1, 0.6, {home: (1, 1, 0.1, 0.6)}),
        compute: (1, 1, 0.05, 0.2, {view: (1, 1, 0.05, 0.2)}),
        matmul: (1, 1, 0.15, 0.15, {compute: (1, 1, 0.15, 0.15)}),
        hashing: (1, 1, 0.1, 0.1, {element: (1, 1, 0.1, 0.1)}),
    }
    parts = split(stats)
    assert parts["router"] == pytest.approx(0.2)  # Home.py, and the element it drew itself
    assert parts["page"] == pytest.approx(0.3)  # the view and the elements it drew
    assert parts["model"] == pytest.approx(0.2)  # the lab's compute and torch's C under it
    assert parts["serialisation"] == pytest.approx(0.1)
    assert sum(parts.values()) == pytest.approx(0.8)


@pytest.mark.parametrize(("part", "module"), [(p, m) for p, modules in RUN_PARTS.items() for m in modules])
def test_streamlits_own_modules_are_charged_by_the_adapters_run_parts(part: str, module: str) -> None:
    path = "/x/site-packages/" + module.replace(".", "/")
    assert category_of((path + ".py", 1, "f")) == part  # the module
    assert category_of((path + "/inner.py", 1, "f")) == part  # or a module of the package
    sibling = path.rpartition("/")[0] + "/another_module.py"  # beside it: its callers' part
    assert category_of((sibling, 1, "f")) is None


def test_run_costs_join_a_sessions_runs_and_end_each_at_the_next_session() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        proc = Path(tmp) / "123"
        proc.mkdir()
        starts = [  # (process CPU at a run's start, page, session, the run's own thread)
            (10.0, "/gpt", "a", 0.05),
            (10.08, "/gpt", "a", 0.01),  # a widget change in the same open
            (10.1, "/reversal", "b", 0.02),
            (10.13, "/basics", "c", 0.03),
            (10.2, "/gpt", "d", 0.1),  # the last: no end, dropped
        ]
        (proc / "meta.json").write_text(json.dumps({"starts": starts}))
        (Path(tmp) / "456").mkdir()  # a process that never wrote: left out
        (proc / "done").touch()
        costs = run_costs(Path(tmp))
    assert {page: [(round(a, 6), round(b, 6)) for a, b in v] for page, v in costs.items()} == {
        "/gpt": [(0.1, 0.06)],
        "/reversal": [(0.03, 0.02)],
        "/basics": [(0.07, 0.03)],
    }
    lines = clock_report(costs)
    assert lines[0].split() == ["page", "opens", "p25", "median", "p75", "p90", "mean", "script"]
    assert lines[-1].split() == ["the", "mix", "3", "30.0", "70.0", "100.0", "100.0", "66.7", "30.0"]


Costs = dict[str, list[tuple[float, float]]]  # page -> (CPU of an open, its script runs' threads)


@pytest.fixture(scope="module")
def clocked(tmp_path_factory: pytest.TempPathFactory) -> tuple[ExploreTally, Costs]:
    """One student, six opens with a widget change each, on an app process in clock mode."""
    folder = tmp_path_factory.mktemp("clock")
    shim = write_sitecustomize(folder / "shim")
    env = {PROFILE_ENV: str(folder / "clock"), CLOCK_ENV: "1"}
    with running_app(folder, env, python_path=str(shim)) as url:
        stop_at = time.monotonic() + 600
        tally = in_own_loop(explore(url, shipped_models(), [0], stop_at, 1, TIMEOUT, max_pages=6))
    return tally, run_costs(folder / "clock")  # the process wrote at its exit


def test_clock_mode_costs_each_open_under_its_page(clocked: tuple[ExploreTally, Costs]) -> None:
    tally, costs = clocked
    assert not tally.errors and not tally.exceptions and len(tally.changes) == 6
    # one cost per open but the last, which has no next open to end it, under the open's page
    opened = Counter(page_of(link) for link in tally.links[:-1])
    assert Counter({p: len(v) for p, v in costs.items()}) == opened
    for total, script in (c for v in costs.values() for c in v):
        assert 0 < script < total < 30  # two runs' threads, less than all the process did for the open
