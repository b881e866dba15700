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

from transformer_core.interp.attribution import Attribution, direct_logit_attribution
from transformer_core.interp.composition import Composition, composition_scores
from transformer_core.interp.heads import CLI_SCORES, HeadScores, ProbeSet, default_probe_set, detect_heads
from transformer_core.interp.importance import (
    Importance,
    gpt_probe_batch,
    head_importance,
    kinds_of,
    reversal_probe_batch,
)
from transformer_core.interp.lens import LogitLens, logit_lens, rollout_of
from transformer_core.interp.patching import Patching, activation_patching
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.io.data import INDUCTION_PROBE
from transformer_core.io.held_out import held_out_data
from transformer_core.models import GPT, require_next_token, require_transformer
from transformer_core.vocab import EOS_ID


@dataclass(frozen=True)
class HeadReport:
    """Detector scores, importance (and a GPT's separate induction-probe sweep), rollout and
    (GPT) logit lens of one checkpoint.

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
    induction_probe: Importance | None
    rollout: np.ndarray
    rollout_tokens: list[str]
    lens: LogitLens | None


def probe_set_of(ckpt: Checkpoint, texts: Sequence[str] | None = None, seed: int = 0) -> ProbeSet:
    """The probe set every part of the report uses: `default_probe_set`, texts replacing its
    texts. An induction-task GPT reads a random segment repeated (INDUCTION_PROBE) unless
    told otherwise: the built-in sentences hold no repeat, so its induction heads would look
    like first-token heads there."""
    cfg = ckpt.config
    if not texts and ckpt.training_task == "induction":
        texts = (INDUCTION_PROBE,)
    return default_probe_set(ckpt.tokenizer, cfg.arch, texts, max_len=cfg.max_len, seed=seed)


def report_detectors(ckpt: Checkpoint, texts: Sequence[str] | None = None) -> HeadScores:
    """Every detector score of every head on the probe set (step 1 of the report)."""
    return detect_heads(ckpt.model, ckpt.tokenizer, probe_set_of(ckpt, texts))


def report_importance(ckpt: Checkpoint, texts: Sequence[str] | None = None) -> Importance:
    """Ablation sweep and gradient proxy (step 2) on the model's own kind of data: a GPT's
    held-out windows of its corpus (or fresh rows of its induction task), a reversal model's
    random strings; the texts instead when given. A GPT whose checkpoint records no data on
    this machine falls back to the built-in texts, and says so in `Importance.data`."""
    model, tok = ckpt.model, ckpt.tokenizer
    probes = probe_set_of(ckpt, texts)
    device = next(model.parameters()).device
    if not isinstance(model, GPT):
        strings = [*probes.texts, *(tok.decode(list(r)) for r in probes.repeats)]
        batch = reversal_probe_batch(tok, strings, device)
        data = "your probe texts" if texts else "random strings of lengths 3-10, as in training,"
        return head_importance(model, batch, data=data + " and random 5-letter segments repeated")
    held_out = None if texts else held_out_data(ckpt)
    if held_out is not None:
        return head_importance(model, gpt_probe_batch(held_out.sequences, device), data=held_out.description)
    data = "your probe text" if texts else "the built-in texts (the checkpoint records no training data here)"
    batch = gpt_probe_batch([tok.encode(t) for t in probes.texts], device)
    return head_importance(model, batch, data=data)


def report_induction_probe(ckpt: Checkpoint, texts: Sequence[str] | None = None) -> Importance | None:
    """The same sweep on repeated random segments, reported apart and labelled: it asks what
    in-context copying needs, not what the model's data needs. None where the model's own
    data already is repeated segments (an induction-task GPT) and for reversal models."""
    model = ckpt.model
    if not isinstance(model, GPT) or ckpt.training_task == "induction":
        return None
    probes = probe_set_of(ckpt, texts)
    batch = gpt_probe_batch([list(r) for r in probes.repeats], next(model.parameters()).device)
    n, segment = len(probes.repeats), len(probes.repeats[0]) // 2
    data = f"an induction probe: {n} random {segment}-character segments, each twice"
    return head_importance(model, batch, data=data)


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
    require_transformer(ckpt.model, "heads")
    require_next_token(ckpt.model, "heads")
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
        induction_probe=report_induction_probe(ckpt, texts),
        rollout=rollout,
        rollout_tokens=rollout_tokens,
        lens=lens,
    )


def report_patching(
    ckpt: Checkpoint, clean: str, corrupted: str, answer: str | None = None, wrong: str | None = None
) -> Patching:
    """Every head patched from the clean into the corrupted text (`activation_patching`);
    raises InputError for texts of unequal length or characters the model lacks."""
    return activation_patching(ckpt.model, ckpt.tokenizer, clean, corrupted, answer, wrong)


def report_attribution(ckpt: Checkpoint, texts: Sequence[str] | None = None) -> Attribution | None:
    """Direct logit attribution of every head on the first text probe (the logit lens's
    text); None for an encoder-decoder."""
    if not isinstance(ckpt.model, GPT):
        return None
    return direct_logit_attribution(ckpt.model, ckpt.tokenizer.encode(probe_set_of(ckpt, texts).texts[0]))


def report_composition(ckpt: Checkpoint) -> Composition | None:
    """Q-, K- and V-composition of every head pair from the weights (GPT only; None for a
    seq2seq model): the /heads page calls it through its cache, the `heads` command directly."""
    return composition_scores(ckpt.model) if isinstance(ckpt.model, GPT) else None


def _num(x: float) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else round(float(x), 6)


def _nested(a: np.ndarray) -> Any:
    """An array as nested lists of `_num` values (NaN -> None)."""
    return [_nested(x) for x in a] if a.ndim else _num(a)


def composition_json(composition: Composition | None) -> dict[str, Any] | None:
    """{"q", "k", "v"}: S[l1][h1][l2][h2] (6 decimals) for l1 < l2, null otherwise; None
    (JSON null) without scores (seq2seq)."""
    if composition is None:
        return None
    return {name: _nested(getattr(composition, name)) for name in ("q", "k", "v")}


def heads_json(
    checkpoint: str,
    heads: HeadScores,
    importance: Importance,
    composition: Composition | None = None,
    induction_probe: Importance | None = None,
) -> dict[str, Any]:
    """The `heads` command's object: {"checkpoint", "heads": [{"kind", "layer", "head",
    "scores": {...}, "ablation": {"delta_loss", "delta_exact_match"}}], "composition"}, null
    where a score does not apply (or, for delta_exact_match, for a GPT); "composition" is
    `composition_json` (null for seq2seq, or when no scores are given). "ablation_data" says
    what the sweep ran on; a GPT's separate induction-probe sweep adds "induction_probe_data"
    and per head "induction_probe": {"delta_loss"} (null without one)."""
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
                        "induction_probe": None
                        if induction_probe is None
                        else {"delta_loss": _num(induction_probe.delta_loss[kind][layer, head])},
                    }
                )
    return {
        "checkpoint": checkpoint,
        "ablation_data": importance.data,
        "induction_probe_data": None if induction_probe is None else induction_probe.data,
        "heads": out,
        "composition": composition_json(composition),
    }
