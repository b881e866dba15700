"""Learning-rate schedules as pure functions of the step (1-based)."""

from __future__ import annotations

import math

import numpy as np


def vaswani_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5): linear warm-up, then
    decay with the inverse square root of the step (Attention Is All You Need, 5.3)."""
    step = max(step, 1)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def warmup_cosine_lr(step: int, peak_lr: float, warmup: int, total: int, min_ratio: float = 0.1) -> float:
    """Linear warm-up to peak_lr over `warmup` steps, then a cosine down to min_ratio * peak."""
    if step < warmup:
        return peak_lr * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak_lr * (min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def lr_curves(
    d_model: int, warmup: int, total: int, min_ratio: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 1..total (total,) and both schedules over them at once, as vaswani_lr and
    warmup_cosine_lr give them step by step: (steps, Vaswani, cosine to the Vaswani peak)."""
    steps = np.arange(1, total + 1, dtype=np.float64)
    vaswani = d_model**-0.5 * np.minimum(steps**-0.5, steps * warmup**-1.5)
    peak = vaswani_lr(warmup, d_model, warmup)
    step0 = steps - 1  # warmup_cosine_lr counts from 0
    progress = np.minimum(1.0, (step0 - warmup) / max(1, total - warmup))
    cosine = np.where(
        step0 < warmup,
        peak * (step0 + 1) / warmup,
        peak * (min_ratio + (1 - min_ratio) * 0.5 * (1 + np.cos(np.pi * progress))),
    )
    return steps.astype(np.int64), vaswani, cosine


def label_smoothing_target(num_classes: int, target: int, smoothing: float) -> list[float]:
    """The smoothed target distribution used in training, as torch's
    cross_entropy(label_smoothing=eps) defines it: eps/V on every class, plus 1 - eps on
    the target. The model is never pushed to full confidence."""
    base = smoothing / num_classes
    dist = [base] * num_classes
    dist[target] += 1.0 - smoothing
    return dist
