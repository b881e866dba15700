"""What /train draws of a run's progress, without Streamlit: its loss, learning rate and
evaluation curves, an induction run's in-context losses and per-head scores over training,
thinned so the live panel stays cheap to redraw while it polls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from attention_lab.charts import xy_charts
from attention_lab.serving import RunProgress

MAX_POINTS = 400  # points per chart line


def thin(values: list[Any], limit: int = MAX_POINTS) -> list[Any]:
    """Every k-th value so that at most about `limit` remain (the last one always kept)."""
    stride = max(1, len(values) // limit)
    return (
        values[::stride] if not values or (len(values) - 1) % stride == 0 else values[::stride] + values[-1:]
    )


def curves(p: RunProgress) -> pd.DataFrame:
    """Loss and learning rate by step, thinned to MAX_POINTS rows."""
    return pd.DataFrame(
        {"step": thin(p.steps), "loss": thin(p.losses), "learning rate": thin(p.lrs)}
    ).set_index("step")


HEAD_SCORES = {  # per-head detector scores an induction run reports at each evaluation
    "previous_token": "Previous-token score",
    "induction": "Induction score",
}
IN_CONTEXT = {"loss_first_copy": "first copy", "loss_repeat": "repeat"}


def in_context_curves(p: RunProgress) -> pd.DataFrame:
    """An induction run's evaluation losses (nats) by step: on the segment's first copy
    (unpredictable) and on its repeat (predictable only in context)."""
    rows = [{"step": e["step"], **{name: e[k] for k, name in IN_CONTEXT.items()}} for e in p.evals if
            all(k in e for k in IN_CONTEXT)]  # fmt: skip
    return pd.DataFrame(rows, columns=["step", *IN_CONTEXT.values()]).set_index("step")


def head_score_curves(p: RunProgress, score: str) -> pd.DataFrame:
    """One detector score (a HEAD_SCORES key) of every head by step: one column per head,
    named "L<layer> H<head>" as on the other pages. Empty before the first evaluation."""
    steps, values = [], []
    for e in p.evals:
        if isinstance(e.get(score), list):
            steps.append(int(e["step"]))
            values.append(np.asarray(e[score], dtype=np.float64))
    if not values:
        return pd.DataFrame()
    layers, heads = values[0].shape
    names = [f"L{layer} H{head}" for layer in range(layers) for head in range(heads)]
    return pd.DataFrame(np.stack([v.reshape(-1) for v in values]), index=pd.Index(steps, name="step"),
                        columns=names)  # fmt: skip


def head_score_chart(p: RunProgress, score: str, height: int = 300) -> dict[str, Any]:
    """One line per head of `score` over training (a attention_lab.charts.specs spec); a layer's heads share
    a dash style."""
    frame = head_score_curves(p, score)
    dashes = {name: (None, "dot", "dash", "dashdot")[int(name.split()[0][1:]) % 4] for name in frame.columns}
    return xy_charts.frame_lines(
        frame, y_title=HEAD_SCORES[score].lower(), y_range=(0.0, 1.02), dashes=dashes, height=height,
        file=f"train_{score}",
    )  # fmt: skip


def head_scores_csv(p: RunProgress) -> str:
    """Every head's detector scores at every evaluation, one row per (step, head)."""
    frames = []
    for score in HEAD_SCORES:
        frame = head_score_curves(p, score)
        if not frame.empty:
            long = frame.reset_index().melt(id_vars="step", var_name="head", value_name="value")
            frames.append(long.assign(score=score))
    if not frames:
        return "step,head,value,score\n"
    return pd.concat(frames)[["step", "score", "head", "value"]].to_csv(index=False)


@dataclass(frozen=True)
class RunCharts:
    """A run's live charts: loss and learning rate always; the evaluation curve (named by
    `eval_title`) or, for an induction run, the in-context losses and every head's scores."""

    loss: dict[str, Any]
    lr: dict[str, Any]
    eval_title: str | None = None
    evaluation: dict[str, Any] | None = None
    in_context: dict[str, Any] | None = None
    head_scores: dict[str, dict[str, Any]] | None = None  # HEAD_SCORES key -> chart


EVAL_TITLES = {
    "reverse": "greedy exact match per length",
    "lm": "validation loss, nats per character",
    "mlm": "validation loss, nats per hidden character",
}


def run_charts(task: str, p: RunProgress) -> RunCharts:
    """The charts of a run of `task` with some steps done."""
    frame = curves(p)
    loss = xy_charts.frame_lines(frame[["loss"]], y_title="loss", file="train_loss")
    lr = xy_charts.frame_lines(frame[["learning rate"]], y_title="learning rate", file="train_lr")
    if task == "induction":
        losses = in_context_curves(p)
        if losses.empty:
            return RunCharts(loss, lr)
        in_context = xy_charts.frame_lines(losses, y_title="nats", height=300, file="train_in_context")
        return RunCharts(
            loss, lr, in_context=in_context, head_scores={s: head_score_chart(p, s) for s in HEAD_SCORES}
        )
    if not p.evals:
        return RunCharts(loss, lr)
    evals = pd.DataFrame(p.evals).set_index("step")
    metric = [c for c in evals.columns if c.startswith("exact_match@") or c == "val_loss"]
    named = evals[metric].rename(columns=lambda c: c.replace("exact_match@", "length ").replace("_", " "))
    title = EVAL_TITLES.get(task, EVAL_TITLES["lm"])
    return RunCharts(loss, lr, title, xy_charts.frame_lines(named, y_title=title, file="train_eval"))


def overlay_charts(runs: dict[str, RunProgress]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two or more runs on one chart each, by label: their training losses, and every block's
    gradient norm before clipping (a block's curves share a dash style across runs)."""
    losses = pd.concat(
        {label: pd.Series(p.losses, index=p.steps, dtype=np.float64) for label, p in runs.items()}, axis=1
    )
    norms = pd.concat(
        {
            f"{label} · {block}": pd.Series([g.get(block, np.nan) for g in p.grad_norms], index=p.steps)
            for label, p in runs.items()
            for block in (p.grad_norms[0] if p.grad_norms else {})
        },
        axis=1,
    )
    stride = max(1, len(losses) // MAX_POINTS)
    loss = xy_charts.frame_lines(losses.iloc[::stride], y_title="training loss", file="train_overlay_loss")
    blocks = sorted({name.split(" · ")[-1] for name in norms.columns})
    dashes = {
        name: (None, "dot", "dash", "dashdot")[blocks.index(name.split(" · ")[-1]) % 4]
        for name in norms.columns
    }
    grads = xy_charts.frame_lines(
        norms.iloc[::stride],
        y_title="gradient norm per block",
        dashes=dashes,
        height=300,
        file="train_overlay_grads",
    )
    return loss, grads
