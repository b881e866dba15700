"""Learning-rate schedules as pure functions of the step (1-based)."""

from __future__ import annotations

import math


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


def label_smoothing_target(num_classes: int, target: int, smoothing: float) -> list[float]:
    """The smoothed target distribution used in training, as torch's
    cross_entropy(label_smoothing=eps) defines it: eps/V on every class, plus 1 - eps on
    the target. The model is never pushed to full confidence."""
    base = smoothing / num_classes
    dist = [base] * num_classes
    dist[target] += 1.0 - smoothing
    return dist
