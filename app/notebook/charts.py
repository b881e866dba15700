"""The notebook view's charts, built by the pages' own spec builders: the grid of every head
of one kind, one head large with its tokens on both axes, and the softmax walk of one query
(one bars chart per step, from q·k to the weights). `scenes` puts them into an offline file."""

from __future__ import annotations

import numpy as np

from attention_lab.charts import offline
from attention_lab.charts import specs as charts
from attention_lab.charts.describe import attention_sentence, grid_sentence
from attention_lab.explorers.query_walk import softmax_walk
from attention_lab.notebook.attention import AttentionSet
from attention_lab.viewmodel.attention import KIND_LABELS
from transformer_core.interp import query_steps

#: an offline file keeps every head's large map while they weigh less than this (bytes of numbers)
HEADS_BUDGET = 8_000_000
#: a notebook output's HTML beside the widget keeps less: it is saved in the .ipynb with every run
OUTPUT_BUDGET = 400_000


def label(kind: str) -> str:
    return KIND_LABELS.get(kind, kind)


def grid(aset: AttentionSet, kind: str, selected: tuple[int, int]) -> dict:
    """Every head of `kind`, a layer per row, `selected` outlined; a click opens a head."""
    queries, keys = aset.axes[kind]
    n_layers, n_heads = aset.shape(kind)
    spec = charts.grid_spec(
        aset.maps[kind],
        queries,
        keys,
        title=f"Every head: {label(kind)}, a layer per row",
        selected=selected,
        cell_px=min(150, max(40, 600 // max(n_heads, 1))),
        file=f"{kind}_all_heads",
        description=grid_sentence(aset.maps[kind], queries, keys, kind),
    )
    return spec


def head(aset: AttentionSet, kind: str, layer: int, head: int) -> dict:
    """One head large: query tokens down the side, key tokens along the top."""
    queries, keys = aset.axes[kind]
    weights = aset.maps[kind][layer, head]
    says = f"{label(kind).capitalize()}, layer {layer} head {head}: "
    return charts.head_spec(
        weights,
        queries,
        keys,
        f"Layer {layer} head {head}: {label(kind)}",
        height=int(min(640, max(320, 160 + 14 * len(queries)))),
        file=f"{kind}_L{layer}H{head}",
        description=says + attention_sentence(weights, queries, keys, kind),
    )


def walk(aset: AttentionSet, kind: str, layer: int, head: int, query: int) -> list[tuple[str, dict]]:
    """(caption, bars) per step of the query's walk from q·k to its weights; [] where the
    source kept no q and k (an adapter's patterns)."""
    if kind not in aset.records:
        return []
    queries, keys = aset.axes[kind]
    record = aset.records[kind][layer]
    said = "unmasked" if record["mask"].all() else kind  # a BERT reads both ways
    steps = softmax_walk(query_steps(record, head, query), aset.scheme, said)
    out = []
    for i, step in enumerate(steps):
        values = np.where(np.isfinite(step.values), step.values, np.nan)  # −∞ (masked): no bar
        title = f"Query {query} {queries[query]!r}, step {i + 1} of {len(steps)}: {step.column}"
        spec = charts.bars_spec(
            keys, {step.column: values}, title, height=300, x_title="key", y_title=step.column,
            file=f"{kind}_L{layer}H{head}_q{query}_step{i + 1}",
        )  # fmt: skip
        out.append((f"Step {i + 1} of {len(steps)}: {step.says}.", spec))
    return out


def _weight(spec: dict) -> int:
    return sum(len(p["z"]["bdata"]) for p in spec["panels"])


def scenes(
    aset: AttentionSet, selected: dict[str, tuple[int, int]], query: int, budget: int = HEADS_BUDGET
) -> list[offline.Scene]:
    """The view as one offline scene: per kind the grid linked to every head's large map (the
    opened one, and others while their numbers weigh under `budget` bytes) and the opened
    head's walk of `query`."""
    blocks: list[offline.Block] = []
    for kind in aset.kinds:
        layer, h = selected[kind]
        n_layers, n_heads = aset.shape(kind)
        first = head(aset, kind, layer, h)
        room = max(0, budget // _weight(first) - 1)  # every head's map of one kind weighs the same
        others = [(la, hd) for la in range(n_layers) for hd in range(n_heads) if (la, hd) != (layer, h)]
        heads = {f"{layer}.{h}": first} | {f"{la}.{hd}": head(aset, kind, la, hd) for la, hd in others[:room]}
        left = len(others[room:])
        note = f"{left} heads' large maps are left out here; to_html() keeps more." if left else ""
        blocks += [offline.text(label(kind).capitalize(), "h3")]
        blocks.append(offline.LinkedHeads(grid(aset, kind, (layer, h)), heads, note))
        steps = walk(aset, kind, layer, h, min(query, len(aset.axes[kind][0]) - 1))
        if steps:
            blocks += [offline.text(f"The walk of one query through layer {layer} head {h}", "h4")]
            blocks.append(offline.Steps(steps))
    return [offline.Scene(aset.title, blocks)]
