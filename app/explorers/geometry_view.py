"""/heads section 10: where one GPT head's queries and keys lie (transformer_core.interp.geometry),
coloured by position or by token kind, with one query linked to the keys it scores highest.
An absolute scheme sorts the colours by position; RoPE only once rotated; ALiBi and T5 never."""

from __future__ import annotations

import streamlit as st

from attention_lab.charts import component
from attention_lab.charts import head_plots as hp
from attention_lab.frame import state
from attention_lab.models.compute import run_cached
from attention_lab.models.explorer_compute import head_geometry

AUTO = -1  # geo_query: the last query of the first text
COLOURS = {"position": "Position", "token": "Token kind"}


def geometry_section(name: str, positions: str, layer: int, head: int, prefix: str) -> None:
    """The controls (RoPE's rotation, colour, the linked query), the picture and what it reads."""
    rotated = positions == "rope" and st.toggle(
        "After RoPE's rotation",
        key=prefix + "rotated",
        help="The vectors the scores use: each turned by its position's angle.",
    )
    geometry, read = run_cached(head_geometry, name, layer, head, rotated)
    first = [i for i in range(geometry.n_queries) if geometry.windows[i] == 0]  # the first text's queries
    c1, c2 = st.columns([1, 2])
    state.clamp_state(prefix + "geo_colour", list(COLOURS), "position")
    colour = c1.radio(
        "Colour by", list(COLOURS), format_func=COLOURS.get, key=prefix + "geo_colour", horizontal=True
    )
    state.resolve_auto(prefix + "geo_query", first, first[-1], AUTO, "in the first text")
    query = c2.selectbox(
        "Link a query to the keys it scores highest",
        first,
        key=prefix + "geo_query",
        format_func=lambda i: f"{geometry.positions[i]} · '{geometry.tokens[i]}' (first text)",
        help=f"A star where that query lies, and dotted lines to the {hp.NEAREST} keys of its own text, "
        "at its position or before, with the largest q·k of these vectors.",
    )
    component.show(hp.geometry_chart(geometry, colour, query), key=prefix + "geometry")
    after = positions in ("alibi", "t5")  # their distance bias comes after q·k
    bias = " The scheme's distance bias is added after q·k, so it is not in these links." if after else ""
    st.caption(
        f"Read on {read}. How much of the position a straight line through this picture recovers (R², "
        f"0 none to 1 all): queries {geometry.r2_queries:.2f}, keys {geometry.r2_keys:.2f}; the two axes "
        f"hold {geometry.explained.sum():.0%} of the vectors' variance. Hover a point for its token.{bias}"
    )
