"""What /heads draws for one checkpoint and probe: every head's detector scores as a table
and maps, the ablation sweep and gradient proxy, rollout, composition, the logit lens and
direct attribution; and, on its own request, activation patching of two texts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from attention_lab.charts import head_plots as hp
from transformer_core.interp import (
    SCORES,
    TEMPLATE_SCORES,
    Attribution,
    Composition,
    HeadScores,
    Importance,
    Patching,
    report,
)
from transformer_core.interp.lens import LogitLens
from transformer_core.io import Checkpoint

BEST = "best score"  # the table's default order: each head's highest template score


@dataclass(frozen=True)
class HeadsRequest:
    """The probe texts typed (None: the checkpoint's built-in probe set): the view's cache key."""

    texts: tuple[str, ...] | None


def head_id(kind: str, layer: int, head: int) -> str:
    """A head's name in the table and the URL: "cross:1.2"."""
    return f"{kind}:{layer}.{head}"


def head_rows(
    scores: HeadScores, importance: Importance, n_layers: int, n_heads: int
) -> list[dict[str, Any]]:
    """One table row per head of every kind: its scores, what it looks like (its best template
    score when >= 0.5), and what ablating it costs."""
    rows = []
    for kind in scores.scores:
        for layer in range(n_layers):
            for head in range(n_heads):
                vals = {hp.LABELS[s]: float(scores.scores[kind][s][layer, head]) for s in SCORES}
                templ = {s: vals[hp.LABELS[s]] for s in TEMPLATE_SCORES if np.isfinite(vals[hp.LABELS[s]])}
                best = max(templ, key=lambda s: templ[s]) if templ else None
                row = {
                    "head": head_id(kind, layer, head),
                    "kind": hp.KIND_NAMES[kind],
                    "layer": layer,
                    "h": head,
                    "looks like": hp.LABELS[best] if best and templ[best] >= 0.5 else "—",
                    BEST: templ[best] if best else np.nan,
                    **vals,
                    "Δ loss (ablated)": float(importance.delta_loss[kind][layer, head]),
                }
                if importance.delta_exact_match is not None:
                    row["Δ exact match"] = float(importance.delta_exact_match[kind][layer, head])
                row["|∂loss/∂gate|"] = float(importance.gradient[kind][layer, head])
                rows.append(row)
    return rows


@dataclass(frozen=True)
class HeadsPage:
    """Everything /heads draws above its patching section, shared read-only by every user."""

    kinds: tuple[str, ...]
    scores: HeadScores
    importance: Importance
    induction_probe: Importance | None  # a GPT's sweep on repeated segments, apart
    composition: Composition | None  # from the weights alone; None for a reversal model
    rollout_tokens: tuple[str, ...]
    lens: LogitLens | None  # GPT only, as attribution
    attribution: Attribution | None
    rows: tuple[dict[str, Any], ...]
    numeric: tuple[str, ...]  # the columns a person can sort by
    charts: dict[str, Any]  # section name -> spec (or list of specs); "patterns" by kind

    def table(self, sort_by: str) -> pd.DataFrame:
        """The rows, largest `sort_by` first (NaN last), that column beside the head's name; the
        kind column dropped when every head is of one kind."""
        table = pd.DataFrame(self.rows).sort_values(sort_by, ascending=False, kind="stable")
        table = table.reset_index(drop=True)
        table.insert(5, sort_by, table.pop(sort_by))
        return table.drop(columns="kind") if table["kind"].nunique() == 1 else table


def pattern_grid(scores: HeadScores, kind: str) -> dict[str, Any]:
    """Every head's pattern of `kind` on the first probe text, as small multiples."""
    queries, keys = scores.pattern_tokens[kind]
    return hp.pattern_grid(scores.patterns[kind], tuple(queries), tuple(keys))


def heads_page(ckpt: Checkpoint, request: HeadsRequest) -> HeadsPage:
    """Every report of the probe (transformer_core.interp.report, as `python -m transformer_core
    heads`) and the charts and table built from them."""
    cfg, texts = ckpt.config, request.texts
    scores = report.report_detectors(ckpt, texts)
    importance = report.report_importance(ckpt, texts)
    induction_probe = report.report_induction_probe(ckpt, texts)
    composition = report.report_composition(ckpt)
    rollout, rollout_tokens, lens = report.report_flow(ckpt, texts)
    attribution = report.report_attribution(ckpt, texts) if lens is not None else None
    kinds = tuple(scores.scores)
    shown = tuple(s for s in SCORES if any(np.isfinite(scores.scores[k][s]).any() for k in kinds))
    size = (cfg.n_layers, cfg.n_heads)
    charts: dict[str, Any] = {
        "scores": hp.score_maps(scores, kinds, shown, *size),
        "patterns": {
            k: hp.pattern_grid(scores.patterns[k], *(tuple(t) for t in scores.pattern_tokens[k]))
            for k in kinds
        },
        "importance": hp.importance_maps(importance, kinds, *size),
        "importance_probe": hp.importance_maps(induction_probe, kinds, *size) if induction_probe else None,
        "rollout": hp.rollout_map(rollout, tuple(rollout_tokens)),
        "composition": hp.composition_maps(composition) if composition is not None else None,
        "lens": hp.lens_table(lens) if lens is not None else None,
        "attribution": hp.attribution_map(attribution) if attribution is not None else None,
    }
    rows = head_rows(scores, importance, *size)
    numeric = tuple(c for c in rows[0] if isinstance(rows[0][c], float))
    return HeadsPage(
        kinds=kinds,
        scores=scores,
        importance=importance,
        induction_probe=induction_probe,
        composition=composition,
        rollout_tokens=tuple(rollout_tokens),
        lens=lens,
        attribution=attribution,
        rows=tuple(rows),
        numeric=numeric,
        charts=charts,
    )


@dataclass(frozen=True)
class PatchRequest:
    """Two texts of equal length, and the answer and wrong token of a logit difference (both or
    neither): the patching view's cache key."""

    clean: str
    corrupted: str
    answer: str | None = None
    wrong: str | None = None


@dataclass(frozen=True)
class PatchView:
    """Activation patching of every head, and its maps."""

    patching: Patching
    maps: dict[str, Any]

    @property
    def metric(self) -> str:
        return "logit difference" if self.patching.metric == "logit_diff" else "clean answer's loss (nats)"


def patch_view(ckpt: Checkpoint, request: PatchRequest) -> PatchView:
    """Each head's output patched from the clean run into the corrupted one; InputError for
    texts the model cannot compare."""
    patching = report.report_patching(ckpt, request.clean, request.corrupted, request.answer, request.wrong)
    return PatchView(patching, hp.patching_maps(patching, ckpt.config.n_layers, ckpt.config.n_heads))
