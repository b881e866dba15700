"""The tiny models of the core tests, for the lessons that run a model."""

from tests.support.models import make_gpt, make_seq2seq  # noqa: F401  (pytest fixtures)
