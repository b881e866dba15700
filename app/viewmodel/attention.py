"""Attention maps as a page draws them: every head of one kind as a grid, and one head large.

The grid is built once per input without a selection or a size; a page outlines the selected head
and sizes the cells on a shallow copy (`selected`), so a click on another head, or the projector
mode, reuses it. A large head is cheap and is built per run from the same trace
(`AttentionMaps.head`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attention_lab.charts import specs as charts
from attention_lab.charts.describe import attention_sentence, grid_sentence
from attention_lab.charts.export import file_stem
from transformer_core import InferenceOptions
from transformer_core.interp import GPTTrace, Seq2SeqTrace, future_cells

KIND_LABELS = {
    "self": "self-attention",
    "cross": "cross-attention (output → input)",
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder self-attention",
}
MASKED_KINDS = ("self", "decoder_self")  # the kinds the causal mask applies to

Trace = GPTTrace | Seq2SeqTrace


def kind_label(kind: str, options: InferenceOptions = InferenceOptions()) -> str:  # noqa: B008  (frozen)
    """What a map of `kind` shows, with its causal mask on or off where it has one, and a
    self-attention's sliding window."""
    window = f", window {options.sliding_window}" if options.sliding_window and kind != "cross" else ""
    if kind not in MASKED_KINDS:
        return KIND_LABELS[kind] + (f" ({window[2:]})" if window else "")
    return f"{KIND_LABELS[kind]} ({'causal' if options.causal else 'causal mask off'}{window})"


def marker(boundary: int | None) -> dict[str, Any] | None:
    """The spec's x_marker where the sampled text starts (None: nothing sampled shown)."""
    return {"at": float(boundary), "text": "sampled →"} if boundary else None


def selected(grid: dict[str, Any], layer: int, head: int, file: str, cell_px: int) -> dict[str, Any]:
    """The grid with (layer, head) outlined, cells of cell_px, saved as `file`: a shallow copy,
    the shared spec stays as it is."""
    n_layers = 1 + max(p["layer"] for p in grid["panels"])
    height = charts.grid_height(n_layers, cell_px, bool(grid["title"]))
    return {**grid, "selected": [int(layer), int(head)], "file": file, "height": height}


def head_figure(
    trace: Trace,
    kind: str,
    options: InferenceOptions,
    layer: int,
    head: int,
    *,
    title: str,
    mark_future: bool,
    height: int,
    file: str,
    boundary: int | None = None,
    label: str | None = None,
    value_name: str = "weight",
) -> dict[str, Any]:
    """One head drawn large as a map spec; mark_future outlines keys after the query that get
    weight; boundary: the first sampled key, marked by a named line; label: what the map shows,
    if not kind_label's words."""
    queries, keys = trace.axes(kind)
    weights = trace.attention[kind][layer, head]
    highlight = future_cells(weights) if mark_future else None
    says = f"{(label or kind_label(kind, options)).capitalize()}, layer {layer} head {head}: "
    says += attention_sentence(weights, queries, keys, kind)
    spec = charts.head_spec(
        weights,
        queries,
        keys,
        title,
        height=height,
        highlight=highlight,
        file=file,
        description=says,
        value_name=value_name,
    )
    return {**spec, "x_marker": marker(boundary)}


@dataclass(frozen=True)
class AttentionMaps:
    """One attention kind of one trace, ready to draw: the grid (no head selected) and what
    a large head needs. Shared read-only by every run and user of the same weights and request
    (whatever the checkpoint's name: file names are given where it is drawn)."""

    trace: Trace
    kind: str
    options: InferenceOptions
    grid: dict[str, Any]
    boundary: int | None = None
    label: str | None = None  # what the maps show, if not kind_label's words (a BERT's self-attention)
    value_name: str = "weight"  # what a cell holds, in tooltips and the colour bar

    def grid_with(self, layer: int, head: int, stem: tuple[str, ...], cell_px: int) -> dict[str, Any]:
        """The grid, (layer, head) outlined, cells of cell_px; stem: (page, checkpoint, ...) of its
        file name."""
        return selected(self.grid, layer, head, file_stem(*stem, self.kind, "all_heads"), cell_px)

    def head(
        self,
        layer: int,
        head: int,
        *,
        title: str,
        height: int,
        stem: tuple[str, ...],
        mark_future: bool = False,
    ) -> dict[str, Any]:
        """One head large; stem: (page, checkpoint, ...) of its file name."""
        return head_figure(
            self.trace,
            self.kind,
            self.options,
            layer,
            head,
            title=title,
            mark_future=mark_future,
            height=height,
            file=file_stem(*stem, self.kind, f"L{layer}H{head}"),
            boundary=self.boundary,
            label=self.label,
            value_name=self.value_name,
        )


def attention_maps(
    trace: Trace,
    kind: str,
    options: InferenceOptions,
    *,
    cell_titles: list[list[str]],
    boundary: int | None = None,
    label: str | None = None,
    value_name: str = "weight",
) -> AttentionMaps:
    """The maps of `kind` for a trace: the grid of every head (clickable; its size, selected head
    and file name are set where it is drawn, `grid_with`) built now,
    the large head on demand; boundary: the first sampled key, marked by a line in every map."""
    queries, keys = trace.axes(kind)
    grid = charts.grid_spec(
        trace.attention[kind],
        queries,
        keys,
        title=f"Every head: {label or kind_label(kind, options)}, a layer per row",
        cell_titles=cell_titles,
        description=grid_sentence(trace.attention[kind], queries, keys, kind),
        value_name=value_name,
    )
    grid = {**grid, "x_marker": marker(boundary)}
    return AttentionMaps(trace, kind, options, grid, boundary, label, value_name)


def titled(grid: dict[str, Any], cell_titles: list[list[str]]) -> dict[str, Any]:
    """The grid with other small-map titles (e.g. scores known only once two grids are built):
    shallow copies, the shared spec stays as it is."""
    panels = [{**p, "title": cell_titles[p["layer"]][p["head"]]} for p in grid["panels"]]
    return {**grid, "panels": panels}


def maps_of(
    trace: Trace,
    kinds: tuple[str, ...],
    options: InferenceOptions,
    titles: dict[str, list[list[str]]],
    *,
    weighted: bool = False,
) -> dict[str, AttentionMaps]:
    """The maps of each kind, its small maps titled by `titles[kind]` (else "L<layer> H<head>");
    weighted: the trace holds each key's share of ||alpha v W_O||, and the maps say so."""
    n_layers, n_heads = trace.attention[kinds[0]].shape[:2]
    plain = [[f"L{l} H{h}" for h in range(n_heads)] for l in range(n_layers)]
    return {
        k: attention_maps(
            trace,
            k,
            options,
            cell_titles=titles.get(k, plain),
            label=f"value-weighted {kind_label(k, options)}" if weighted else None,
            value_name="share sent" if weighted else "weight",
        )
        for k in kinds
    }
