"""/admin through Streamlit's AppTest (issue 27, item 5): nothing without an admin set up
(and a how-to), a wrong token refused, the right one shows the run store's figures, the
runs folder against its budget, "no GPU" on a CPU box, and page runs counted by the router."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.serving import RunRequest
from attention_lab.serving.page_stats import PageCounter
from attention_lab.serving.progress import PROGRESS_FILE
from attention_lab.serving.sqlite_store import SQLiteRunStore
from tests.app.figures import tables

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "correct-horse-battery-staple"


@pytest.fixture(autouse=True)
def runs_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "runs"
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(root))
    monkeypatch.setenv("ATTENTION_LAB_DEVICE", "cpu")
    monkeypatch.delenv("ATTENTION_LAB_ADMINS", raising=False)
    monkeypatch.delenv("ATTENTION_LAB_ADMIN_TOKEN", raising=False)
    return root


def open_admin() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.run()
    at.switch_page("views/admin.py")
    at.run()
    assert not at.exception
    return at


def sign_in(at: AppTest, token: str) -> None:
    at.main.text_input[0].input(token)
    at.main.button[0].click().run()  # the form's submit button
    assert not at.exception


def request(label: str) -> RunRequest:
    train = dict(task="reverse", steps=500, batch_size=4, device="cpu", eval_every=0)
    return RunRequest(train=train, positions="none", size="tiny", label=label)


def test_without_an_admin_configured_the_page_shows_how_to_and_no_figures() -> None:
    at = open_admin()
    assert at.title[0].value == "The admin's view"
    assert "ATTENTION_LAB_ADMIN_TOKEN" in at.info[0].value and "ATTENTION_LAB_ADMINS" in at.info[0].value
    assert not at.metric and not at.header and not at.main.text_input


def test_a_wrong_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_ADMIN_TOKEN", TOKEN)
    at = open_admin()
    assert at.main.text_input[0].label == "Admin token" and not at.metric
    sign_in(at, TOKEN[:-1])
    assert "not this box's admin token" in at.error[0].value
    assert not at.metric and not at.header


def test_a_bad_admins_setting_is_named_on_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_ADMINS", "alice@example.org, bob")
    at = open_admin()
    assert "ATTENTION_LAB_ADMINS: 'bob' is not an e-mail address" in at.error[0].value
    assert not at.metric


def test_the_right_token_shows_the_stores_figures(monkeypatch: pytest.MonkeyPatch, runs_root: Path) -> None:
    monkeypatch.setenv("ATTENTION_LAB_ADMIN_TOKEN", TOKEN)
    store = SQLiteRunStore(max_running=1, spawn=False)  # nothing trains: the states stay put
    first, second, third = (store.submit(request(f"run {n}")) for n in (1, 2, 3))
    store.mark_running(first, 4242)
    store.stop(third)  # a waiting run is cancelled at once
    lines = [{"kind": "start", "pid": 4242, "total": 500, "device": "cpu"}]
    lines += [{"kind": "step", "step": s, "loss": 1.0, "lr": 0.01, "total": 500} for s in (1, 2, 37)]
    (store.folder(first) / PROGRESS_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines))

    at = open_admin()
    sign_in(at, TOKEN)
    assert not at.main.text_input  # the form is gone once admitted
    assert [h.value for h in at.header] == ["Run queue", "Disk", "GPU memory per process", "Pages"]
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Waiting"], metrics["Training"], metrics["Finished"], metrics["Failed"]) == (
        "1",
        "1",
        "1",
        "0",
    )
    runs = tables(at)["admin_runs"].set_index("label")
    assert list(runs.index) == ["run 2", "run 1", "run 3"]  # waiting and training first, newest first
    assert runs.loc["run 1", "status"] == "running" and runs.loc["run 2", "status"] == "queued (#1)"
    assert runs.loc["run 1", "steps"] == "37 / 500" and runs.loc["run 1", "device"] == "cpu"
    assert runs.loc["run 1", "run"] == first[:12] + "…" and runs["owner"].isna().all()  # "—": no owners yet
    assert set(runs["GPU memory"]) == {"no GPU"}
    assert "No GPU on this box" in " ".join(c.value for c in at.caption)
    used = store.disk_bytes()
    assert used > 0 and metrics["Runs folder"] == f"{used / 2**20:,.1f} MiB of 1,024.0 MiB"
    # every run of the router was counted: two page runs before the form, the form's, the rerun
    assert int(metrics["Page runs"]) == PageCounter(runs_root).figures().runs_total - 1 >= 3
    assert metrics["Errors"] == "0"

    at.run()  # the session stays admitted; the figures follow the store
    store.stop(second)
    at.run()
    assert {m.label: m.value for m in at.metric}["Waiting"] == "0"


def test_a_page_that_raises_counts_as_an_error(monkeypatch: pytest.MonkeyPatch, runs_root: Path) -> None:
    """The router counts the error and Streamlit still shows the exception."""
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=60)
    at.run()
    before = PageCounter(runs_root).figures()
    monkeypatch.setattr("attention_lab.accounts.admin.admitted", lambda: 1 / 0)
    at.switch_page("views/admin.py")
    at.run()
    assert at.exception and at.exception[0].message == "division by zero"
    after = PageCounter(runs_root).figures()
    assert (after.runs_total - before.runs_total, after.errors_total - before.errors_total) == (1, 1)
