"""Everything the `heads` command and the /heads page show about one checkpoint, in one call.

Why: the command line and the page must agree on every number, so both call
`analyze_heads` and the JSON shape (`heads_json`, the `heads` command's contract) is built
here, not in the UI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from transformer_core.interp.heads import CLI_SCORES, HeadScores, ProbeSet, default_probe_set, detect_heads
from transformer_core.interp.importance import (
    Importance,
    gpt_probe_batch,
    head_importance,
    kinds_of,
    reversal_probe_batch,
)
from transformer_core.interp.lens import LogitLens, logit_lens, rollout_of
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.io.tokenizer import EOS_ID
from transformer_core.models import GPT


@dataclass(frozen=True)
class HeadReport:
    """Detector scores, importance, rollout and (GPT) logit lens of one checkpoint.

    rollout (T, T) is over `rollout_tokens` (the first text probe; the encoder's for
    reversal, with EOS)."""

    checkpoint: str
    arch: str
    n_layers: int
    n_heads: int
    kinds: tuple[str, ...]
    probes: ProbeSet
    heads: HeadScores
    importance: Importance
    rollout: np.ndarray
    rollout_tokens: list[str]
    lens: LogitLens | None


def analyze_heads(ckpt: Checkpoint, texts: Sequence[str] | None = None, seed: int = 0) -> HeadReport:
    """Run every detector, the ablation sweep, the gradient proxy, rollout and the logit
    lens on a probe set (default: `default_probe_set`; texts replace its texts)."""
    model, tok, cfg = ckpt.model, ckpt.tokenizer, ckpt.config
    probes = default_probe_set(tok, cfg.arch, texts, max_len=cfg.max_len, seed=seed)
    scores = detect_heads(model, tok, probes)
    device = next(model.parameters()).device
    first = tok.encode(probes.texts[0])
    if isinstance(model, GPT):
        batch = gpt_probe_batch(
            [tok.encode(t) for t in probes.texts] + [list(r) for r in probes.repeats], device
        )
        lens = logit_lens(model, tok, first)
        rollout_tokens = tok.token_labels(first)
    else:
        strings = [*probes.texts, *(tok.decode(list(r)) for r in probes.repeats)]
        batch = reversal_probe_batch(tok, strings, device)
        lens = None
        rollout_tokens = tok.token_labels([*first, EOS_ID])
    importance = head_importance(model, batch)
    return HeadReport(
        checkpoint=ckpt.name,
        arch=cfg.arch,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        kinds=kinds_of(model),
        probes=probes,
        heads=scores,
        importance=importance,
        rollout=rollout_of(model, first),
        rollout_tokens=rollout_tokens,
        lens=lens,
    )


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else round(float(x), 6)


def heads_json(report: HeadReport) -> dict[str, Any]:
    """The `heads` command's object: {"checkpoint", "heads": [{"kind", "layer", "head",
    "scores": {...}, "ablation": {"delta_loss", "delta_exact_match"}}]}, null where a score
    does not apply (or, for delta_exact_match, for a GPT)."""
    imp = report.importance
    heads = []
    for kind in report.kinds:
        for layer in range(report.n_layers):
            for head in range(report.n_heads):
                scores = {name: _num(report.heads.scores[kind][name][layer, head]) for name in CLI_SCORES}
                em = None if imp.delta_exact_match is None else imp.delta_exact_match[kind][layer, head]
                heads.append(
                    {
                        "kind": kind,
                        "layer": layer,
                        "head": head,
                        "scores": scores,
                        "ablation": {
                            "delta_loss": _num(imp.delta_loss[kind][layer, head]),
                            "delta_exact_match": None if em is None else _num(em),
                        },
                    }
                )
    return {"checkpoint": report.checkpoint, "heads": heads}
