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
