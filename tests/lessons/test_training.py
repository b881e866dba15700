"""attention_lab.lessons.training: warm-up schedules and the label-smoothed target."""

from __future__ import annotations

import numpy as np
import pytest

from attention_lab.lessons import training as lesson
from attention_lab.lessons.variance import entropy


def test_lr_schedules() -> None:
    s = lesson.lr_schedules(d_model=512, warmup=400, total=2000)
    assert s.steps[0] == 1 and len(s.steps) == 2000
    assert int(np.argmax(s.vaswani)) + 1 == 400
    assert s.vaswani.max() == pytest.approx(512**-0.5 * 400**-0.5)
    assert s.cosine.max() == pytest.approx(s.vaswani.max())
    assert s.cosine[-1] == pytest.approx(0.1 * s.vaswani.max(), rel=0.01)
    assert (np.diff(s.vaswani[:399]) > 0).all() and (np.diff(s.vaswani[400:]) < 0).all()


def test_smoothed_target() -> None:
    t = lesson.smoothed_target(10, 3, 0.1)
    assert t.target_mass == pytest.approx(0.91)
    assert t.distribution.sum() == pytest.approx(1.0)
    assert t.distribution[0] == pytest.approx(0.01)
    assert t.loss_floor == pytest.approx(float(entropy(t.distribution)))
    assert lesson.smoothed_target(5, 0, 0.0).loss_floor == 0.0
    with pytest.raises(ValueError):
        lesson.smoothed_target(5, 5, 0.1)
    with pytest.raises(ValueError):
        lesson.smoothed_target(5, 0, 1.5)
