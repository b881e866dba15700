"""A lecturer's class session: what it shares with the class (the push to followers:
test_class_push.py; followers through real servers: tests/deploy/test_class_session.py)."""

from __future__ import annotations


def test_a_lecturers_visit_to_admin_is_not_shown_to_the_class(tmp_path, monkeypatch) -> None:
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from attention_lab.lecture.classroom import LEADING, sessions

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
