"""/cost's lesson numbers: the chapter's hand count against the built model, every difference
named (nothing left unexplained), and the curves' crossover."""

from __future__ import annotations

import random

import pytest

from attention_lab.lessons import cost as lesson
from tests.support.models import random_block
from transformer_core import cost


def test_the_chapter_model_differs_from_its_estimate_by_two_named_reasons() -> None:
    built = cost.parameter_counts(lesson.CHAPTER.config())
    cmp = lesson.compare_with_chapter(lesson.CHAPTER, built)
    assert sum(e for _, e, _ in cmp.rows) == 526_368 and sum(b for _, _, b in cmp.rows) == 380_064
    assert [n for _, n in cmp.reasons] == [147_456, -1_152]  # the FFN twice; its biases
    assert cmp.unexplained == 0


@pytest.mark.parametrize("seed", range(30))
def test_every_difference_from_the_estimate_is_named(seed: int) -> None:
    rng = random.Random(seed)
    heads = rng.choice([1, 2, 4, 8])
    settings = lesson.CostSettings(
        "seq2seq",
        d_model=heads * 2 * rng.randint(1, 16),
        n_heads=heads,
        d_ff=rng.randint(1, 300),
        n_layers=rng.randint(1, 4),
        vocab_size=rng.randint(5, 300),
        T=rng.randint(1, 60),
        **random_block(rng),
    )
    cmp = lesson.compare_with_chapter(settings, cost.parameter_counts(settings.config()))
    assert cmp.unexplained == 0, cmp


def test_the_curves_span_one_to_8192_and_cross_at_d_ff() -> None:
    c = lesson.curves(lesson.CHAPTER, window=256)
    assert c.lengths[0] == 1 and c.lengths[-1] == 8192
    assert c.crossover == 192
    at_2048 = list(c.lengths).index(2048)
    assert c.memory_full[at_2048] == 4 * 2048 * 2048 * 4
    assert c.memory_window is not None and c.memory_window[at_2048] == 4 * 2048 * 256 * 4


def test_a_timing_is_refused_above_its_bounds() -> None:
    def refusal(settings: lesson.CostSettings) -> str:
        return lesson.timing_refusal(settings, sum(cost.parameter_counts(settings.config()).values())) or ""

    assert "parameters are more than" in refusal(lesson.CostSettings("gpt", 1024, 16, 4096, 24, 50_000, 4096))
    assert "GFLOP is more than" in refusal(lesson.CostSettings("gpt", 512, 8, 2048, 8, 100, 4096))
    assert "positions timed here" in refusal(lesson.CostSettings("gpt", 64, 4, 256, 1, 100, 8192))
    assert lesson.timing_refusal(lesson.CHAPTER, 380_064) is None
