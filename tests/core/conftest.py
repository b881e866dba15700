"""Fixtures of the core tests: the tiny models, and a fixed seed for every test."""

from __future__ import annotations

import pytest
import torch

from tests.support.models import VOCAB, make_gpt, make_seq2seq, tiny_config  # noqa: F401  (fixtures)


@pytest.fixture(autouse=True)
def _deterministic():
    torch.manual_seed(1234)
    yield
