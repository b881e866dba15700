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
from transformer_core.models import GPT
from transformer_core.vocab import EOS_ID


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


def probe_set_of(ckpt: Checkpoint, texts: Sequence[str] | None = None, seed: int = 0) -> ProbeSet:
    """The probe set every part of the report uses: `default_probe_set`, texts replacing its texts."""
    cfg = ckpt.config
    return default_probe_set(ckpt.tokenizer, cfg.arch, texts, max_len=cfg.max_len, seed=seed)


def report_detectors(ckpt: Checkpoint, texts: Sequence[str] | None = None) -> HeadScores:
    """Every detector score of every head on the probe set (step 1 of the report)."""
    return detect_heads(ckpt.model, ckpt.tokenizer, probe_set_of(ckpt, texts))


def report_importance(ckpt: Checkpoint, texts: Sequence[str] | None = None) -> Importance:
    """Ablation sweep and gradient proxy on the probe batch: the texts plus the repeated
    random segments (step 2). Reversal: teacher-forced on the true reversals."""
    model, tok = ckpt.model, ckpt.tokenizer
    probes = probe_set_of(ckpt, texts)
    device = next(model.parameters()).device
    if isinstance(model, GPT):
        batch = gpt_probe_batch(
            [tok.encode(t) for t in probes.texts] + [list(r) for r in probes.repeats], device
        )
    else:
        strings = [*probes.texts, *(tok.decode(list(r)) for r in probes.repeats)]
        batch = reversal_probe_batch(tok, strings, device)
    return head_importance(model, batch)


def report_flow(
    ckpt: Checkpoint, texts: Sequence[str] | None = None
) -> tuple[np.ndarray, list[str], LogitLens | None]:
    """Rollout (T, T) with its token labels, and the logit lens (GPT only), on the first
    text probe (step 3)."""
    model, tok = ckpt.model, ckpt.tokenizer
    first = tok.encode(probe_set_of(ckpt, texts).texts[0])
    if isinstance(model, GPT):
        return rollout_of(model, first), tok.token_labels(first), logit_lens(model, tok, first)
    return rollout_of(model, first), tok.token_labels([*first, EOS_ID]), None


def analyze_heads(ckpt: Checkpoint, texts: Sequence[str] | None = None) -> HeadReport:
    """Run every detector, the ablation sweep, the gradient proxy, rollout and the logit
    lens on one probe set (default: `default_probe_set`; texts replace its texts)."""
    rollout, rollout_tokens, lens = report_flow(ckpt, texts)
    cfg = ckpt.config
    return HeadReport(
        checkpoint=ckpt.name,
        arch=cfg.arch,
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        kinds=kinds_of(ckpt.model),
        probes=probe_set_of(ckpt, texts),
        heads=report_detectors(ckpt, texts),
        importance=report_importance(ckpt, texts),
        rollout=rollout,
        rollout_tokens=rollout_tokens,
        lens=lens,
    )


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else round(float(x), 6)


def heads_json(checkpoint: str, heads: HeadScores, importance: Importance) -> dict[str, Any]:
    """The `heads` command's object: {"checkpoint", "heads": [{"kind", "layer", "head",
    "scores": {...}, "ablation": {"delta_loss", "delta_exact_match"}}]}, null where a score
    does not apply (or, for delta_exact_match, for a GPT)."""
    out = []
    for kind, table in heads.scores.items():
        n_layers, n_heads = table["entropy"].shape
        for layer in range(n_layers):
            for head in range(n_heads):
                scores = {name: _num(table[name][layer, head]) for name in CLI_SCORES}
                em = None if importance.delta_exact_match is None else importance.delta_exact_match[kind]
                out.append(
                    {
                        "kind": kind,
                        "layer": layer,
                        "head": head,
                        "scores": scores,
                        "ablation": {
                            "delta_loss": _num(importance.delta_loss[kind][layer, head]),
                            "delta_exact_match": None if em is None else _num(em[layer, head]),
                        },
                    }
                )
    return {"checkpoint": checkpoint, "heads": out}
