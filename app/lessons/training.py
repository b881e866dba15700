"""Training signals (/variance, last section): learning-rate warm-up and label smoothing.

The schedules and the smoothed target are the trainer's own functions
(`transformer_core.train.schedules`); this module lays them out for plotting.

Shapes: n steps, V classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attention_lab.lessons.variance import entropy
from transformer_core.train import label_smoothing_target, lr_curves


@dataclass(frozen=True)
class Schedules:
    steps: np.ndarray  # (n,) 1..total
    vaswani: np.ndarray  # (n,) d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
    cosine: np.ndarray  # (n,) linear warm-up then cosine, peaking at the Vaswani peak


def lr_schedules(d_model: int, warmup: int, total: int, min_ratio: float = 0.1) -> Schedules:
    """Both schedules over steps 1..total (n = total); the cosine one reaches the Vaswani
    peak, so the two curves differ only in how they decay."""
    return Schedules(*lr_curves(d_model, warmup, total, min_ratio))


@dataclass(frozen=True)
class SmoothedTarget:
    distribution: np.ndarray  # (V,) what the loss pulls the prediction towards
    target_mass: float  # probability left on the true class
    loss_floor: float  # entropy of the distribution: the lowest cross-entropy possible, nats


def smoothed_target(num_classes: int, target: int, smoothing: float) -> SmoothedTarget:
    """Label-smoothed target (V,) as torch's cross_entropy(label_smoothing=eps) defines it,
    with the loss it can never go below: the model is never asked to be 100% sure."""
    if not 0 <= target < num_classes:
        raise ValueError(f"target must be in 0..{num_classes - 1}, got {target}")
    if not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"smoothing must be in [0, 1], got {smoothing}")
    dist = np.asarray(label_smoothing_target(num_classes, target, smoothing))
    return SmoothedTarget(dist, float(dist[target]), float(entropy(dist)))
