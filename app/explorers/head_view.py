"""The explorers' grid of every head next to one head drawn large, with the layer and head
selectors that follow a click on the grid (/gpt, /reversal; /compare uses the figures)."""

from __future__ import annotations

import functools
from typing import Any

import streamlit as st

from attention_lab.charts import export
from attention_lab.charts import specs as charts
from attention_lab.charts.describe import attention_sentence, grid_sentence
from attention_lab.frame import present
from attention_lab.frame.state import clamp_state
from attention_lab.models.compute import run_cached
from attention_lab.models.explorer_compute import trace_of
from transformer_core import InferenceOptions
from transformer_core.interp import future_cells
from transformer_core.io import Checkpoint

KIND_LABELS = {
    "self": "self-attention",
    "cross": "cross-attention (output → input)",
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder self-attention",
}
MASKED_KINDS = ("self", "decoder_self")  # the kinds the causal mask applies to


def kind_label(kind: str, options: InferenceOptions = InferenceOptions()) -> str:  # noqa: B008  (frozen)
    """What a map of `kind` shows, with its causal mask on or off where it has one."""
    if kind not in MASKED_KINDS:
        return KIND_LABELS[kind]
    return f"{KIND_LABELS[kind]} ({'causal' if options.causal else 'causal mask off'})"


# Figures are cached like the numbers: a rerun that leaves text and options alone (a click on
# a selector, a second visitor of the same link) reuses the built figure, the costliest thing
# a page sends.
def grid_figure(
    ckpt: Checkpoint,
    text: str,
    options: InferenceOptions,
    kind: str,
    selected: tuple[int, int],
    cell_titles: list[list[str]],
    cell_px: int,
    file: str,
    boundary: int | None = None,
    ids: tuple[int, ...] | None = None,
) -> dict[str, Any]:
    """Every head of one attention kind as a map spec, clickable, the selected head outlined;
    boundary: the first sampled key, marked by a line in every map; ids: see gpt_view."""
    tr = trace_of(ckpt, text, options, ids)
    queries, keys = tr.axes(kind)
    spec = charts.grid_spec(
        tr.attention[kind],
        queries,
        keys,
        title=f"Every head: {kind_label(kind, options)}, a layer per row",
        cell_titles=cell_titles,
        selected=selected,
        cell_px=cell_px,
        file=file,
        description=grid_sentence(tr.attention[kind], queries, keys, kind),
    )
    return {**spec, "x_marker": _marker(boundary)}


def _marker(boundary: int | None) -> dict[str, Any] | None:
    """The spec's x_marker where the sampled text starts (None: nothing sampled shown)."""
    return {"at": float(boundary), "text": "sampled →"} if boundary else None


def head_figure(
    ckpt: Checkpoint,
    text: str,
    options: InferenceOptions,
    kind: str,
    layer: int,
    head: int,
    title: str,
    mark_future: bool,
    height: int,
    file: str,
    boundary: int | None = None,
    ids: tuple[int, ...] | None = None,
) -> dict[str, Any]:
    """One head drawn large as a map spec; mark_future outlines keys after the query that get
    weight; boundary: the first sampled key, marked by a named line; ids: see gpt_view."""
    tr = trace_of(ckpt, text, options, ids)
    queries, keys = tr.axes(kind)
    weights = tr.attention[kind][layer, head]
    highlight = future_cells(weights) if mark_future else None
    says = f"{kind_label(kind, options).capitalize()}, layer {layer} head {head}: "
    says += attention_sentence(weights, queries, keys, kind)
    spec = charts.head_spec(
        weights, queries, keys, title, height=height, highlight=highlight, file=file, description=says
    )
    return {**spec, "x_marker": _marker(boundary)}


def head_selectors(
    prefix: str, n_layers: int, n_heads: int, cols: list[Any] | None = None
) -> tuple[int, int]:
    """Layer and head selectboxes (in the two given columns, else in two new ones)."""
    clamp_state(prefix + "layer", list(range(n_layers)), 0)
    clamp_state(prefix + "head", list(range(n_heads)), 0)
    c1, c2 = cols or st.columns(2)
    layer = c1.selectbox("Layer", list(range(n_layers)), key=prefix + "layer", persist_state="session")
    head = c2.selectbox("Head", list(range(n_heads)), key=prefix + "head", persist_state="session")
    return int(layer), int(head)


def names_no_head(prefix: str) -> bool:
    """True when neither the link nor this session names a layer and head for the page (call
    it before the page seeds its state): the page then opens on its lesson's head."""
    return not any(name in st.query_params or prefix + name in st.session_state for name in ("layer", "head"))


def open_on_lesson(prefix: str, about: Any, lesson: tuple[int, int], unnamed: bool) -> None:
    """Set the page's layer and head to `lesson`, the most telling head for what is shown
    (`about`: the checkpoint, or checkpoint and input), where nobody named one (`unnamed`, from
    names_no_head) or the head shown is still the lesson's head of something shown before."""
    memo = prefix + "lesson_head"  # (about, layer, head) of the last head opened this way
    shown = (st.session_state.get(prefix + "layer"), st.session_state.get(prefix + "head"))
    last = st.session_state.get(memo)
    if unnamed or (last is not None and last[0] != about and tuple(last[1:]) == shown):
        st.session_state[prefix + "layer"], st.session_state[prefix + "head"] = (int(v) for v in lesson)
        st.session_state[memo] = (about, *(int(v) for v in lesson))


def pick_head(prefix: str, layer: int, head: int) -> None:
    """Select a head clicked in a grid: the page's layer and head selectors follow it."""
    st.session_state[prefix + "layer"], st.session_state[prefix + "head"] = layer, head


def grid_columns() -> tuple[Any, Any]:
    """The (grid, large head) columns of grid_and_head, for a page that puts the layer and
    head selectors above the large head (so the grid starts higher on the screen)."""
    left, right = st.columns([1.15, 1], gap="medium")
    return left, right


def _sizes(n_layers: int, n_heads: int, selectors_above: bool) -> tuple[int, int]:
    """(grid cell px, large head height) for a 1280 x 720 projector: the grid column is about
    440 px wide, so each head gets a roughly square cell of 440 / n_heads pixels."""
    cell_px = int(min(150, max(70, 440 / n_heads)))
    height = max(330, min(520, cell_px * n_layers + 60))
    if st.session_state.get(present.KEY):  # the grid and the large head fit on one projected screen
        cell_px = int(min(cell_px, max(50, (present.GRID_PX - 75) / n_layers)))
        height = (
            max(250, cell_px * n_layers + 75 - (125 if selectors_above else 0)) - charts.TOOLS_PX
        )  # + buttons
    return cell_px, height


def grid_and_head(
    name: str,
    text: str,
    options: InferenceOptions,
    kind: str,
    *,
    prefix: str,
    chart: str,
    layer: int,
    head: int,
    head_title: str,
    cell_titles: list[list[str]],
    mark_future: bool = False,
    columns: tuple[Any, Any] | None = None,
    boundary: int | None = None,
    ids: tuple[int, ...] | None = None,
) -> None:
    """The whole (L, H) grid of `kind`, clickable, next to the selected head drawn large
    (in the given `grid_columns`, else in new ones); boundary: the first sampled key, marked;
    ids: the tokens `text` shows when they are not its encoding (see gpt_view)."""
    cell_px, height = _sizes(len(cell_titles), len(cell_titles[0]), columns is not None)
    left, right = columns or grid_columns()
    page = prefix.rstrip("_")
    grid_file = export.file_stem(page, name, kind, "all_heads")
    grid = run_cached(
        grid_figure, name, text, options, kind, (layer, head), cell_titles, cell_px, grid_file, boundary, ids
    )
    charts.show(grid, key=f"{prefix}{chart}_grid", on_head=functools.partial(pick_head, prefix), where=left)
    head_file = export.file_stem(page, name, kind, f"L{layer}H{head}")
    large = run_cached(
        head_figure,
        name,
        text,
        options,
        kind,
        layer,
        head,
        head_title,
        mark_future,
        height,
        head_file,
        boundary,
        ids,
    )
    charts.show(large, key=f"{prefix}{chart}_head", where=right)
