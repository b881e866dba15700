"""/compare's last section for two GPTs: where each side keeps position, read in the opened
head's queries and keys (the geometry of /heads section 10, both sides on one page). A scheme
that adds codes (sinusoidal, learned) writes position into the vectors; RoPE only in their
rotation; ALiBi and T5 nowhere in them (they add it to the score)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attention_lab.charts import component
from attention_lab.charts import head_plots as hp
from attention_lab.frame import tables
from attention_lab.models.compute import run_cached
from attention_lab.models.explorer_compute import head_geometry
from attention_lab.models.resources import checkpoint_label
from transformer_core.io import Checkpoint

#: where a scheme puts position, said beside its R²
WHERE = {
    "sinusoidal": "added to the embeddings: in the vectors",
    "learned": "added to the embeddings: in the vectors",
    "rope": "in the rotation of q and k",
    "alibi": "in the score (a distance bias)",
    "t5": "in the score (a learned bias)",
    "none": "nowhere but the causal mask",
}


def geometry_side_by_side(
    names: dict[str, str], ckpts: dict[str, Checkpoint], layer: int, head: int, prefix: str
) -> None:
    """Both sides' queries and keys of head (layer, head), as the scores use them (after RoPE's
    rotation for a RoPE side), and a table of how much position each holds (R²)."""
    rows = {}
    for side, col in zip(names, st.columns(len(names), gap="medium"), strict=True):
        rope = ckpts[side].config.positions == "rope"
        used, read = run_cached(head_geometry, names[side], layer, head, rope)
        plain = run_cached(head_geometry, names[side], layer, head, False)[0] if rope else used
        chart = hp.geometry_chart(used)
        title = f"{side.upper()}: {checkpoint_label(names[side])}, layer {layer} head {head}"
        component.show({**chart, "title": title, "file": f"compare_{names[side]}_{chart['file']}"},
                       key=f"{prefix}{side}_geometry", where=col)  # fmt: skip
        rows[f"{side.upper()}: {names[side]}"] = {
            "position": WHERE.get(ckpts[side].config.positions, ckpts[side].config.positions),
            "keys R², vectors": plain.r2_keys,
            "keys R², as scored": used.r2_keys,
            "queries R², vectors": plain.r2_queries,
            "queries R², as scored": used.r2_queries,
        }
    tables.show(pd.DataFrame.from_dict(rows, orient="index"), key=prefix + "geometry_r2", digits=2)
    st.caption(
        f"Read on {read} of each model, from its weights (the switches above do not change them). R²: "
        "how much of the position a straight line through the projected vectors recovers, 0 none to 1 all. "
        '"As scored": after RoPE\'s rotation for a RoPE model, the vectors themselves otherwise.'
    )
