"""Issue 27 #1: property-based fuzzing of every page through AppTest (attention_lab.testing.fuzz):
random links (every parameter a page reads, unknown ones, the router's) and typed text. For
each: no exception, every value the page did not keep is named in a notice, and the URL
afterwards holds only accepted values. A few cases per page here (reproducible: derandomized);
benchmarks/fuzz_pages.py runs 20,000."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from attention_lab.testing import fuzz

CASES = settings(
    max_examples=6,  # per page: about 40 s for all pages on a 2-core machine
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.generate),  # no shrinking in CI (minutes a page): the case as found
)


@pytest.mark.parametrize("page", fuzz.PAGES)
def test_a_fuzzed_link_breaks_no_page(page: str) -> None:
    fuzz.page_keys(page)  # recorded once, outside the cases

    @CASES
    @given(params=fuzz.links(page))
    def check(params: dict[str, str]) -> None:
        at = fuzz.open_page(page, params)
        assert not fuzz.link_problems(page, params, at), (params, fuzz.link_problems(page, params, at))

    check()


@pytest.mark.parametrize("page", list(fuzz.TEXT_WIDGETS))
def test_fuzzed_typing_breaks_no_page(page: str) -> None:
    at = fuzz.open_page(page, {})

    @settings(CASES, max_examples=3)
    @given(value=fuzz.garbage() | st.sampled_from(["", "ab", "x" * 10_000]))
    def check(value: str) -> None:
        assert not fuzz.typed_problems(page, value, at), value

    check()


def test_the_properties_can_fail() -> None:
    """A page that kept a value silently, or let a rejected one into the URL, is caught."""
    at = fuzz.open_page("gpt", {"layer": "-1"})
    assert not fuzz.link_problems("gpt", {"layer": "-1"}, at)
    at.warning[0].proto.body = ""  # as if the notice were never shown
    assert "named in no notice" in " ".join(fuzz.link_problems("gpt", {"layer": "-1"}, at))
    at.query_params["layer"] = "-1"  # as if the rejected value had stayed in the URL
    assert "not an accepted value" in " ".join(fuzz.link_problems("gpt", {"layer": "-1"}, at))
