"""The explorers' grid of every head next to one head drawn large, with the layer and head
selectors that follow a click on the grid (/gpt, /reversal, /compare). The maps themselves
come from the view layer (attention_lab.viewmodel.attention)."""

from __future__ import annotations

import functools
from typing import Any

import streamlit as st

from attention_lab.charts import component
from attention_lab.charts import specs as charts
from attention_lab.frame import present
from attention_lab.frame.state import clamp_state
from attention_lab.viewmodel.attention import AttentionMaps


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
    """The (grid, large head) columns of draw_maps, for a page that puts the layer and
    head selectors above the large head (so the grid starts higher on the screen)."""
    left, right = st.columns([1.15, 1], gap="medium")
    return left, right


def map_sizes(n_layers: int, n_heads: int, selectors_above: bool) -> tuple[int, int]:
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


def draw_maps(
    maps: AttentionMaps,
    *,
    stem: tuple[str, str],
    prefix: str,
    chart: str,
    layer: int,
    head: int,
    head_title: str,
    mark_future: bool = False,
    columns: tuple[Any, Any] | None = None,
    height: int | None = None,
    cell_px: int | None = None,
) -> None:
    """The whole (L, H) grid of one kind, clickable, next to the selected head drawn large
    (in the given `grid_columns`, else in new ones); stem: (page, checkpoint) of the file names;
    height, cell_px: the large head's and the grid cells' (else map_sizes'). A click on the grid
    brings the large head into view where it is not (on a phone it lies under the grid:
    app/static/charts.js, `follow`)."""
    L, H = maps.trace.attention[maps.kind].shape[:2]
    fitted_cell, fitted = map_sizes(L, H, selectors_above=columns is not None)
    left, right = columns or grid_columns()
    head_key = f"{prefix}{chart}_head"
    grid = {**maps.grid_with(layer, head, stem, cell_px or fitted_cell), "follow": head_key}
    component.show(
        grid, key=f"{prefix}{chart}_grid", on_head=functools.partial(pick_head, prefix), where=left
    )
    large = maps.head(
        layer, head, title=head_title, height=height or fitted, stem=stem, mark_future=mark_future
    )
    component.show(large, key=head_key, where=right)


def weighted_toggle(prefix: str, where: Any) -> bool:
    """Whether the maps show attention weights or what each key actually sends (the view reads
    the state before this draws it, under the maps it changes)."""
    return bool(
        where.toggle(
            "Value-weighted: what each key sends",
            key=prefix + "weighted",
            persist_state="session",
            help="Weigh each weight by the size of the key's value after the output projection, "
            "‖α·v·W_O‖ (Kobayashi et al. 2020), shown as each key's share of its row.",
        )
    )


def split_link(where: Any, checkpoint: str, text: str, kind: str, layer: int, head: int) -> None:
    """A link to /heads section 9 for this head on this text: its score split into the parts of
    the residual stream that produce it, i.e. why it attends where it does."""
    where.page_link(
        "views/heads.py",
        label=f"Why head {layer}.{head} attends there: its score split",
        icon=":material/call_split:",
        help="Opens /heads section 9 on this text: the head's scores split into the parts of the "
        "residual stream that make them (embedding, position, earlier heads and MLPs).",
        query_params={
            "checkpoint": checkpoint,
            "probe": text[:200],
            "open": f"{kind}:{layer}.{head}",
            "why_query": "-1",  # the last query, and the key it attends most
            "why_key": "-1",
        },
    )
