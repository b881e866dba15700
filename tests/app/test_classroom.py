"""The follower's poll: how often it asks, by class size (each poll is a Streamlit run)."""

from __future__ import annotations

import pytest
from lab.classroom import CLASS_POLLS_PER_SECOND, MAX_POLL_SECONDS, POLL_SECONDS, poll_seconds


@pytest.mark.parametrize(
    ("following", "seconds"),
    [(0, POLL_SECONDS), (1, POLL_SECONDS), (100, 1.0), (150, 1.5), (200, 2.0), (10_000, MAX_POLL_SECONDS)],
)
def test_a_large_class_polls_less_often(following: int, seconds: float) -> None:
    assert CLASS_POLLS_PER_SECOND == 100.0 and POLL_SECONDS == 1.0  # the figures below assume these
    assert poll_seconds(following) == pytest.approx(seconds)


def test_the_box_wide_polls_stay_bounded() -> None:
    """Polls per second of the whole class: its size while small, then at most the budget."""
    for n in (10, 50, 100, 200, 300):
        assert n / poll_seconds(n) <= max(n / POLL_SECONDS, CLASS_POLLS_PER_SECOND) + 1e-9
    assert 1000 / poll_seconds(1000) == pytest.approx(1000 / MAX_POLL_SECONDS)


def test_a_lecturers_visit_to_admin_is_not_shown_to_the_class(tmp_path, monkeypatch) -> None:
    from pathlib import Path

    from lab.classroom import LEADING, sessions
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path))
    home = str(Path(__file__).resolve().parents[2] / "app" / "Home.py")
    at = AppTest.from_file(home, default_timeout=60)
    at.run()
    at.switch_page("views/basics.py").run()
    next(b for b in at.sidebar.button if b.label == "Start a class session").click().run()
    code = at.session_state[LEADING]
    at.switch_page("views/basics.py").run()
    assert sessions().view(code).page == "basics"
    at.switch_page("views/admin.py").run()
    assert not at.exception
    assert sessions().view(code).page == "basics"  # the class still sees the lesson
