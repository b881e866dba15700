"""Positional encodings (/positions): sinusoidal, the linear-shift property, RoPE, ALiBi,
and the learned tables of the shipped checkpoints."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from attention_lab.frame import tables
from attention_lab.frame.state import clamp_list_state, clamp_state, init_state, write_state
from attention_lab.lesson_pages import lesson_charts as lc
from attention_lab.lesson_pages import lesson_views
from attention_lab.lesson_pages import position_charts as pc
from attention_lab.lesson_pages.lesson_page import chart_writer, in_range
from attention_lab.lessons import positions as lesson
from attention_lab.lessons.positions import LEARNED_EXPECTED, ROPE_D_HEAD
from attention_lab.models.resources import load_model, model_choices, shipped_checkpoints
from transformer_core import CheckpointError

P = "positions_"  # session_state prefix; the URL keeps the short names
DEFAULTS = {
    "length": 50,
    "d_model": 64,
    "dims": ["0", "8", "14", "20"],
    "offset": 5,
    "rope_pair": 0,
    "rope_n": 8,
    "rope_x": 1.0,
    "rope_y": 0.0,
    "rope_offset": 3,
    "alibi_heads": 8,
    "alibi_len": 6,
    "alibi_head": 0,
    "alibi_content": True,
    "learned_model": "",
    "t5_len": 24,
    "t5_dir": "encoder",
    "t5_model": "",
}
VALID = {
    "length": in_range(2, 256),
    "d_model": lambda v: 2 <= v <= 256 and v % 2 == 0,
    "offset": in_range(-25, 25),
    "rope_pair": in_range(0, ROPE_D_HEAD // 2 - 1),
    "rope_n": in_range(1, 24),
    "rope_x": in_range(-2.0, 2.0),
    "rope_y": in_range(-2.0, 2.0),
    "rope_offset": in_range(-20, 20),
    "alibi_heads": in_range(1, 16),
    "alibi_len": in_range(2, 24),
    "alibi_head": in_range(0, 15),
    "t5_len": in_range(2, 64),
    "t5_dir": lambda v: v in T5_DIRECTIONS,
}
T5_DIRECTIONS = {"encoder": "encoder: both directions", "decoder": "decoder: causal"}
init_state(DEFAULTS, VALID, prefix=P)
chart = chart_writer(P)


def scheme_choices(scheme: str) -> list[str]:
    """Shipped and own models whose positions are `scheme` ("learned": a table; "t5": a bias)."""
    shipped = shipped_checkpoints()
    out = []
    for task in ("reverse", "lm"):
        for name in model_choices(task):
            meta = shipped.get(name)
            try:
                positions = meta["config"]["positions"] if meta else load_model(name).config.positions
            except (KeyError, TypeError, CheckpointError):
                continue
            if positions == scheme:
                out.append(name)
    return out


st.title("Positional encodings", anchor=False)
st.markdown(
    "Attention treats its input as a set: shuffle the tokens and the outputs shuffle along "
    "(see *Attention basics*). Position has to be put in from outside. Absolute schemes add a "
    "code to each token's embedding; relative schemes act inside attention, on q and k (RoPE) "
    "or on the scores (ALiBi)."
)

# ---------------------------------------------------------------------------------------
st.header("1 · Sinusoidal codes")
st.markdown(
    "Each pair of dimensions (2i, 2i+1) holds the sine and cosine of position × ωᵢ, with "
    "ωᵢ = 10000^(−2i/d_model). The first pairs turn fast, the last ones very slowly, so every "
    "position gets its own fingerprint and nearby positions get similar ones."
)
c1, c2 = st.columns(2)
c1.slider("number of positions", 2, 256, key=P + "length", persist_state="session")
c2.slider("d_model", 2, 256, step=2, key=P + "d_model", persist_state="session")
length, d_model = int(st.session_state[P + "length"]), int(st.session_state[P + "d_model"])
sin = lesson_views.sinusoids(length, d_model)
chart(pc.pe_heatmap(sin["table"], f"sinusoidal table: {length} positions × {d_model} dimensions"), "pe_heat")

dim_options = [str(i) for i in range(d_model)]
clamp_list_state(P + "dims", dim_options, DEFAULTS["dims"], at_most=6)  # a link's or a wider table's, named
st.multiselect(
    "dimensions to draw as waves", dim_options, key=P + "dims", persist_state="session", max_selections=6
)
chart(pc.waves_chart(sin["table"], [int(d) for d in st.session_state[P + "dims"]]), "pe_waves")

c1, c2 = st.columns(2)
with c1:
    chart(pc.similarity_heatmap(sin["cos"], "cosine similarity of every pair of positions"), "pe_cos")
with c2:
    adjacent = {f"sinusoidal, d_model = {d_model}": sin["adjacent"]}
    learned_tables: dict[str, tuple[np.ndarray, dict]] = {}
    for name in scheme_choices("learned"):
        try:
            ckpt = load_model(name)
        except CheckpointError as e:
            st.warning(f"{name}: {e}")
            continue
        table = lesson.learned_position_table(ckpt.model)
        learned_tables[name] = (table, ckpt.meta)
        adjacent[f"{name} (learned, d_model = {table.shape[1]})"] = lesson.adjacent_similarity(table[:length])
    chart(
        pc.lines_chart(
            adjacent,
            "adjacent positions: cos(PE(p), PE(p+1))",
            y_title="cosine similarity",
            y_range=[-0.5, 1.05],
            height=420,
        ),
        "pe_adjacent",
    )
    if len(adjacent) == 1:
        st.caption("No learned checkpoint is available yet to compare with.")
st.caption(
    "The diagonal band says neighbours look alike, far-apart positions less so. A learned table "
    "starts as random noise (neighbours unrelated, cosine near 0) and only gets smooth where "
    "training made it so."
)

# ---------------------------------------------------------------------------------------
st.header("2 · The linear-shift property")
st.markdown(
    "Moving every position by the same offset Δ turns each (sin, cos) pair by the angle Δ·ωᵢ, "
    "whatever the starting position. So one fixed matrix M(Δ), block-diagonal with 2×2 rotations, "
    'maps PE(p) to PE(p+Δ) for **every** p: a linear layer can learn "look Δ tokens back" '
    "without knowing absolute positions."
)
st.slider("offset Δ", -25, 25, key=P + "offset", persist_state="session")
offset = int(st.session_state[P + "offset"])
check, p, pair = lesson_views.shift(length, d_model, offset)
c1, c2 = st.columns([1, 2])
with c1:
    st.metric(
        f"max |M·PE(p) − PE(p+Δ)| over p = {check.first}..{check.first + length - 1}",
        f"{check.max_abs_error:.1e}",
    )
    st.caption("Computed in double precision: zero up to rounding.")
    n_show = min(d_model, 6)
    shift_frame = pd.DataFrame(
        {
            f"PE({p})": pair[0, :n_show],
            f"M·PE({p})": (check.rotation @ pair[0])[:n_show],
            f"PE({p + offset})": pair[1, :n_show],
        },
        index=[f"dim {i}" for i in range(n_show)],
    )
    tables.show(shift_frame, key=P + "shift_table", digits=4)
with c2:
    n_mat = min(d_model, 12)
    chart(
        lc.value_heatmap(
            check.rotation[:n_mat, :n_mat],
            [str(i) for i in range(n_mat)],
            [str(i) for i in range(n_mat)],
            f"M(Δ = {offset}), first {n_mat} of {d_model} dimensions",
            x_title="input dim",
            y_title="output dim",
            value_name="entry",
            colorscale="RdBu_r",  # red above zero, as in every map on this page
            zmin=-1,
            zmax=1,
            digits=2,
            show_values=n_mat <= 8,
            height=420,
        ),
        "shift_fig",
    )

# ---------------------------------------------------------------------------------------
st.header("3 · RoPE: rotate q and k")
st.markdown(
    "RoPE adds nothing to the embeddings. It turns each pair of coordinates of q and k by an "
    "angle proportional to the token's position. A dot product of two rotated vectors depends "
    "only on the **difference** of their angles, so q·k sees m − n, never m or n on their own."
)
c1, c2 = st.columns([1, 2])
with c1:
    st.slider(
        "which pair (0 turns fastest)", 0, ROPE_D_HEAD // 2 - 1, key=P + "rope_pair", persist_state="session"
    )
    st.slider("positions to draw (0..n)", 1, 24, key=P + "rope_n", persist_state="session")
    x1, x2 = st.columns(2)
    x1.number_input("vector x", -2.0, 2.0, step=0.1, key=P + "rope_x", persist_state="session")
    x2.number_input("vector y", -2.0, 2.0, step=0.1, key=P + "rope_y", persist_state="session")
pair_idx, n_pos = int(st.session_state[P + "rope_pair"]), int(st.session_state[P + "rope_n"])
vx, vy = float(st.session_state[P + "rope_x"]), float(st.session_state[P + "rope_y"])
with c2:
    if vx == 0 and vy == 0:
        st.info("The zero vector has no direction to rotate: set x or y.")
    else:
        path = lesson.rope_pair_path([vx, vy], np.arange(n_pos + 1), ROPE_D_HEAD, pair_idx)
        chart(
            pc.rope_path_chart(path, list(range(n_pos + 1)), lesson.rope_frequency(ROPE_D_HEAD, pair_idx)),
            "rope_fig",
        )
st.markdown(
    f"Now a random q and k (d_head = {ROPE_D_HEAD}) placed at different absolute positions with the "
    "**same offset**. The RoPE score stays put; with sinusoids *added* to q and k instead, it drifts."
)
st.slider("offset m − n", -20, 20, key=P + "rope_offset", persist_state="session")
table = lesson_views.rope_table(int(st.session_state[P + "rope_offset"]))
c1, c2 = st.columns([3, 1])
tables.show(
    table.round(6),
    key=P + "rope_table",
    where=c1,
    index=False,
    digits=6,
)
spread = float(table["RoPE score"].max() - table["RoPE score"].min())
c2.metric("spread of the RoPE scores", f"{spread:.1e}")
c2.metric("spread with added sinusoids", f"{float(np.ptp(table['added sinusoid score'])):.3f}")

# ---------------------------------------------------------------------------------------
st.header("4 · ALiBi: a distance penalty on the scores")
st.markdown(
    "ALiBi leaves q and k alone and subtracts m_h·(i − j) from the score of query i and key j. "
    "Each head h gets its own slope m_h from a geometric sequence, so some heads look only at "
    "the last few tokens and others far back. Nothing here is learned."
)
c1, c2, c3, c4 = st.columns(4)
c1.slider("heads", 1, 16, key=P + "alibi_heads", persist_state="session")
c2.slider("sequence length", 2, 24, key=P + "alibi_len", persist_state="session")
n_heads, a_len = int(st.session_state[P + "alibi_heads"]), int(st.session_state[P + "alibi_len"])
clamp_state(P + "alibi_head", list(range(n_heads)), 0, why=f"with {n_heads} heads")  # a link: head 13 of 8
c3.selectbox("head to inspect", list(range(n_heads)), key=P + "alibi_head", persist_state="session")
c4.toggle(
    "content scores",
    key=P + "alibi_content",
    persist_state="session",
    help="Off: every content score is 0, so only the distance bias shapes the weights.",
)
demo = lesson.alibi_demo(n_heads, a_len, content=1.0 if st.session_state[P + "alibi_content"] else 0.0)
head = int(st.session_state[P + "alibi_head"])
c1, c2, c3 = st.columns([2, 3, 3])
with c1:
    chart(pc.slopes_chart(demo.slopes), "alibi_slopes")
labels = [str(i) for i in range(a_len)]
small = a_len <= 6
with c2:
    bias = np.where(demo.mask, demo.bias[head], np.nan)
    chart(
        lc.value_heatmap(
            bias,
            labels,
            labels,
            f"head {head}: bias −{demo.slopes[head]:.4g}·(i − j)",
            value_name="bias",
            colorscale="Reds_r",
            zmin=None,
            zmax=0.0,
            digits=1,
            show_values=small,
            height=380,
        ),
        "alibi_bias",
    )
with c3:
    biased = np.where(demo.mask, demo.scores + demo.bias[head], np.nan)
    chart(
        lc.value_heatmap(
            biased,
            labels,
            labels,
            "scores + bias (future masked)",
            value_name="score",
            colorscale="RdBu_r",  # red above zero, as in every map on this page
            zmin=None,
            zmax=None,
            digits=1,
            show_values=small,
            height=380,
        ),
        "alibi_scores",
    )
per_row = 8 if n_heads > 8 and n_heads % 8 == 0 else n_heads
grid = demo.weights.reshape(n_heads // per_row, per_row, a_len, a_len)
titles = [
    [f"h{r * per_row + c} m={demo.slopes[r * per_row + c]:.3g}" for c in range(per_row)]
    for r in range(n_heads // per_row)
]
chart(
    lc.attention_grid(
        grid,
        labels,
        labels,
        title="weights = softmax(scores + bias), causal mask",
        cell_titles=titles,
        cell_px=150,
        file="alibi_weights",
    ),
    "alibi_grid",
)
st.caption("Steep heads keep their weight on the diagonal (the newest tokens); gentle heads spread it out.")

# ---------------------------------------------------------------------------------------
st.header("5 · Learned tables and their edge")
st.markdown(
    "A learned scheme is just a table with one trainable row per position, up to max_len. "
    "Rows for positions that training never filled stay close to their random start, and beyond "
    "max_len there is no row at all: such inputs are refused."
)
names = list(learned_tables)
if not names:
    st.info(
        "No checkpoint with learned positions is available yet (expected: "
        + ", ".join(LEARNED_EXPECTED)
        + ")."
    )
else:
    clamp_state(P + "learned_model", names, names[0])  # a link's unknown model is named
    st.selectbox("checkpoint", names, key=P + "learned_model", persist_state="session")
    table, meta = learned_tables[st.session_state[P + "learned_model"]]
    seen = lesson.positions_seen_in_training(meta)
    max_len = table.shape[0]
    c1, c2, c3 = st.columns(3)
    c1.metric("rows in the table (max_len)", max_len)
    c2.metric("positions seen in training", seen if seen is not None else "unknown")
    c3.metric("positions with no row", f"{max_len} and up")
    chart(
        pc.pe_heatmap(
            table,
            f"{st.session_state[P + 'learned_model']}: the trained position table",
            seen=seen,
            zabs=float(np.abs(table).max()),
        ),
        "learned_heat",
    )
    norms = np.linalg.norm(table, axis=1)
    c1, c2 = st.columns(2)
    with c1:
        chart(
            pc.lines_chart(
                {"row norm": norms},
                "size of each row",
                y_title="‖row‖",
                marker_x=seen,
                marker_text="end of training lengths" if seen else "",
            ),
            "learned_norm",
        )
    with c2:
        chart(
            pc.lines_chart(
                {
                    "sinusoidal": lesson_views.sinusoids(max_len, table.shape[1])["adjacent"],
                    "learned": lesson.adjacent_similarity(table),
                },
                "adjacent-position similarity",
                y_title="cosine",
                y_range=[-0.5, 1.05],
                marker_x=seen,
                marker_text="",
            ),
            "learned_adjacent",
        )
    if seen is not None and seen < max_len:
        st.caption(
            f"Positions {seen}..{max_len - 1} were never used in training: their rows are "
            "still noise, and a model that meets them has nothing sensible to read."
        )

# ---------------------------------------------------------------------------------------
st.header("6 · T5: a learned bias for each distance bucket")
st.markdown(
    "T5 (Raffel et al., 2020) adds to the score of query i and key j a learned number that depends "
    "only on the distance j − i, one per head. Distances are put in **buckets**: each small distance "
    "gets its own, larger ones share log-spaced buckets, and everything beyond the last shares it, so "
    "any distance has a bias. In an encoder keys before and after the query get separate buckets; in a "
    "decoder only the past counts. The table is shared by every layer."
)
c1, c2 = st.columns(2)
c1.slider("sequence length", 2, 64, key=P + "t5_len", persist_state="session")
c2.radio(
    "attention",
    list(T5_DIRECTIONS),
    format_func=T5_DIRECTIONS.__getitem__,
    key=P + "t5_dir",
    persist_state="session",
    horizontal=True,
)
t5_len, both_ways = int(st.session_state[P + "t5_len"]), st.session_state[P + "t5_dir"] == "encoder"
buckets = lesson.t5_bucket_map(t5_len, both_ways, max_len=128)
labels = [str(i) for i in range(t5_len)]
chart(
    lc.value_heatmap(
        buckets.astype(float),
        labels,
        labels,
        f"bucket of every (query, key), {T5_DIRECTIONS[st.session_state[P + 't5_dir']]}",
        value_name="bucket",
        colorscale="Purples",
        zmin=0.0,
        zmax=31.0,
        digits=0,
        show_values=t5_len <= 12,
        height=420,
    ),
    "t5_buckets",
)
st.caption(
    "32 buckets and, for a model of 128 positions, log-spaced buckets up to distance 128. "
    "In the encoder, buckets 0-15 are keys at or before the query, 16-31 keys after it; the decoder "
    "uses all 32 for the past (its future is masked)."
)
t5_names = scheme_choices("t5")
if t5_names:
    clamp_state(P + "t5_model", t5_names, t5_names[0])  # a link's unknown model is named
    st.selectbox("trained model", t5_names, key=P + "t5_model", persist_state="session")
    try:
        t5_charts = lesson_views.t5_bias_charts(st.session_state[P + "t5_model"], t5_len)
    except CheckpointError as e:
        st.error(f"{st.session_state[P + 't5_model']}: {e}")
    else:
        for where, spec in t5_charts.items():
            chart(spec, f"t5_bias_{where}")
            st.caption(
                f"{where}: what each head adds to a score, by distance. A head whose bias peaks near 0 "
                "keeps to the query's neighbours; one that stays high far away reads far back."
            )

write_state([k for k in DEFAULTS if st.session_state.get(P + k) not in (None, "")], prefix=P)
