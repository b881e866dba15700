"""Fixtures of the serving tests: the tiny models of the core tests."""

from tests.support.models import tiny_config  # noqa: F401  (a pytest fixture)
