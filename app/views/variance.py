"""Why divide by sqrt(d_k) (/variance): score variance, softmax saturation, a trained model
without the scaling, and the training signals (learning-rate schedules, label smoothing)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from attention_lab.explorers.model_input import char_name
from attention_lab.frame import tables
from attention_lab.frame.state import clamp_state, init_state, write_state
from attention_lab.lesson_pages import lesson_charts as lc
from attention_lab.lesson_pages import lesson_views
from attention_lab.lesson_pages.lesson_page import chart_writer, in_range
from attention_lab.lessons import training
from attention_lab.lessons import variance as lesson
from attention_lab.lessons.variance import TABLE_DIMS
from attention_lab.models.compute import run_cached
from attention_lab.models.resources import load_model, model_choices
from transformer_core import CheckpointError, InputError

KIND_LABELS = {
    "self": "self-attention",
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder self-attention (masked)",
    "cross": "cross-attention",
}
SHORT_KIND = {
    "self": "self",
    "encoder_self": "encoder self",
    "decoder_self": "decoder self",
    "cross": "cross",
}


P = "variance_"  # session_state prefix; the URL keeps the short names
DEFAULTS = {
    "d_k": 16,
    "samples": 5000,
    "keys": 16,
    "scale_model": "",
    "scale_text": "attention",
    "no_scaling": False,
    "scale_kind": "",
    "lr_d_model": 512,
    "warmup": 4000,
    "total": 20000,
    "classes": 10,
    "eps": 0.1,
}
VALID = {
    "d_k": in_range(1, 512),
    "samples": in_range(500, 10000),
    "keys": in_range(2, 64),
    "scale_text": lambda v: len(v) <= 200,
    "lr_d_model": in_range(16, 1024),
    "warmup": in_range(100, 8000),
    "total": in_range(2000, 50000),
    "classes": in_range(2, 30),
    "eps": in_range(0.0, 0.5),
}
init_state(DEFAULTS, VALID, prefix=P)
chart = chart_writer(P)


st.title("Why divide by √d_k", anchor=False)
st.markdown(
    "Scaled dot-product attention divides every score by √d_k before the softmax. This page "
    "shows what goes wrong without it: dot products of longer vectors spread out, the softmax "
    "turns nearly one-hot, and almost no gradient gets through."
)

# ---------------------------------------------------------------------------------------
st.header("1 · Dot products grow with d_k")
st.markdown(
    "Take q and k with independent entries of mean 0 and variance 1. Then q·k is a sum of d_k "
    "products that each have variance 1, so its variance is about **d_k**; divided by √d_k it "
    "is about **1**, whatever d_k is."
)
c1, c2 = st.columns(2)
c1.slider("d_k", 1, 512, key=P + "d_k", persist_state="session")
c2.slider("random (q, k) pairs", 500, 10000, step=500, key=P + "samples", persist_state="session")
d_k, n = int(st.session_state[P + "d_k"]), int(st.session_state[P + "samples"])
chart(lesson_views.score_histograms(d_k, n), "var_hist")
dims = tuple(sorted(set(TABLE_DIMS) | {d_k}))
vt = lesson_views.score_variance_table(dims, n)
st.markdown(f"**Measured variance** ({n} pairs per row, computed now)")
c1, _ = st.columns([1, 1])
tables.show(
    pd.DataFrame(
        {
            "d_k": vt.dims,
            "variance of q·k": vt.raw,
            "variance of q·k / √d_k": vt.scaled,
            "": ["◀ the slider's d_k" if d == d_k else "" for d in vt.dims],  # the row this page is on
        }
    ),
    key=P + "var_table",
    where=c1,
    index=False,
    digits=3,
)

# ---------------------------------------------------------------------------------------
st.header("2 · Wide scores saturate the softmax")
st.markdown(
    "Softmax exaggerates gaps between scores. When the scores spread over tens of units, the "
    "largest one takes nearly all the weight. The entropy of the row collapses, and the "
    "derivative of the softmax, diag(p) − ppᵀ, goes to zero: the model stops learning through "
    "that head. Dividing by √d_k keeps every curve flat."
)
st.slider("keys per query", 2, 64, key=P + "keys", persist_state="session")
n_keys = int(st.session_state[P + "keys"])
chart(lc.saturation_chart(lesson_views.saturation(n_keys), d_k, n_keys), "sat_fig")
r = lesson.softmax_row(d_k, n_keys, seed=1)
c1, c2 = st.columns([3, 2])
with c1:
    chart(lc.row_bars(r.raw_weights, r.scaled_weights, d_k), "row_fig")
with c2:
    tables.show(
        pd.DataFrame(
            {
                "unscaled": [
                    r.raw_weights.max(),
                    lesson.entropy(r.raw_weights),
                    lesson.softmax_jacobian_norm(r.raw_weights),
                ],
                "scaled": [
                    r.scaled_weights.max(),
                    lesson.entropy(r.scaled_weights),
                    lesson.softmax_jacobian_norm(r.scaled_weights),
                ],
            },
            index=["largest weight", "entropy (nats)", "gradient norm"],
        )
        .astype(float)
        .round(3),
        key=P + "row_table",
        digits=3,  # the largest weight as every weight reads (charts.WEIGHT_DIGITS)
    )
    st.caption(
        f"A uniform row over {n_keys} keys has entropy ln {n_keys} = {np.log(n_keys):.3f} nats; "
        "a one-hot row has 0. The d_k slider above moves this row too."
    )

# ---------------------------------------------------------------------------------------
st.header("3 · Switch the scaling off in a trained model")
st.markdown(
    "The same weights, run once as trained and once with the 1/√d_k removed from every head "
    "(inference only; nothing is changed in the model). The heads sharpen towards one-hot."
)
choices = model_choices("reverse") + model_choices("lm")
if not choices:
    st.info("No trained model is available yet: the shipped checkpoints appear here once trained.")
else:
    reversal = [c for c in choices if c.startswith("reverse-")]
    clamp_state(P + "scale_model", choices, (reversal or choices)[0])  # a link's unknown model is named
    c1, c2, c3 = st.columns([1, 2, 1], vertical_alignment="bottom")
    c1.selectbox("model", choices, key=P + "scale_model", persist_state="session")
    try:
        ckpt = load_model(st.session_state[P + "scale_model"])
    except CheckpointError as e:
        ckpt = None
        st.error(f"Could not load {st.session_state[P + 'scale_model']}: {e}")
    if ckpt is not None:
        c2.text_input("input text", key=P + "scale_text", persist_state="session", max_chars=200)
        c3.toggle(
            "no scaling",
            key=P + "no_scaling",
            persist_state="session",
            help="Score = q·k instead of q·k / √d_k in every head.",
        )
        try:
            with st.spinner("Running the model twice…"):
                cmp = run_cached(
                    lesson.compare_scaling,
                    st.session_state[P + "scale_model"],
                    st.session_state[P + "scale_text"],
                )
        except InputError as e:
            cmp = None
            st.error(f"That input cannot be used: {e}")
        if cmp is not None:
            if cmp.unknown:
                chars = ", ".join(char_name(c) for c in sorted({c for _, c in cmp.unknown}))
                st.warning(f"Not in this model's alphabet, read as <unk>: {chars}.")
            kinds = list(cmp.scaled)
            clamp_state(P + "scale_kind", kinds, "cross" if "cross" in kinds else kinds[0])
            stats = pd.DataFrame(
                {
                    SHORT_KIND.get(kind, kind): [
                        cmp.stats["scaled"][kind].mean_max_weight,
                        cmp.stats["unscaled"][kind].mean_max_weight,
                        cmp.stats["scaled"][kind].mean_entropy,
                        cmp.stats["unscaled"][kind].mean_entropy,
                    ]
                    for kind in kinds
                },
                index=[
                    "mean max weight, scaled",
                    "mean max weight, no scaling",
                    "mean entropy (nats), scaled",
                    "mean entropy (nats), no scaling",
                ],
            ).round(3)
            c1, _ = st.columns([3, 2])
            tables.show(stats, key=P + "scale_stats", where=c1, digits=3)  # weights: WEIGHT_DIGITS
            if ckpt.task == "reverse":
                st.caption(
                    f"Output as trained: **{cmp.output['scaled']}** · without scaling: "
                    f"**{cmp.output['unscaled']}**"
                )
            tag = "unscaled" if st.session_state[P + "no_scaling"] else "scaled"
            if len(kinds) > 1:
                st.segmented_control(
                    "attention",
                    kinds,
                    key=P + "scale_kind",
                    persist_state="session",
                    required=True,
                    format_func=lambda k: KIND_LABELS.get(k, k),
                )
            kind = st.session_state[P + "scale_kind"] or kinds[0]
            att = (cmp.unscaled if tag == "unscaled" else cmp.scaled)[kind]
            setting = "no scaling" if tag == "unscaled" else "scaled as trained"
            title = f"{KIND_LABELS.get(kind, kind)}, {setting}"
            chart(
                lc.attention_grid(
                    att,
                    cmp.query_tokens[tag][kind],
                    cmp.key_tokens[tag][kind],
                    title=title,
                    cell_px=190 if att.shape[0] <= 2 else 150,
                    file=f"{st.session_state[P + 'scale_model']}_{kind}_{tag}",
                ),
                "scale_grid",
            )

# ---------------------------------------------------------------------------------------
st.header("4 · Training signals: warm-up and label smoothing")
st.markdown(
    "Two more knobs from the original recipe that keep early training gentle. The learning "
    "rate **warms up** linearly (large steps on random weights can wreck the network), then "
    "decays. Vaswani et al. decay it as 1/√step and tie its size to d_model^−0.5; most models "
    "today decay it along a cosine instead."
)
c1, c2, c3 = st.columns(3)
c1.slider("d_model", 16, 1024, step=16, key=P + "lr_d_model", persist_state="session")
c2.slider("warm-up steps", 100, 8000, step=100, key=P + "warmup", persist_state="session")
c3.slider("total steps", 2000, 50000, step=1000, key=P + "total", persist_state="session")
warmup = int(st.session_state[P + "warmup"])
total = max(int(st.session_state[P + "total"]), warmup + 1)
sch = lesson_views.lr_schedules(int(st.session_state[P + "lr_d_model"]), warmup, total)
chart(lc.lr_chart(sch, warmup), "lr_fig")
st.caption(
    f"Peak learning rate {sch.vaswani.max():.2e} at step {int(sch.steps[np.argmax(sch.vaswani)])}; "
    f"at the last step: 1/√step {sch.vaswani[-1]:.2e}, cosine {sch.cosine[-1]:.2e}."
)

st.markdown(
    "**Label smoothing** trains against a softened target: a share ε of the probability is "
    "spread over all classes, so the model is never asked to be 100% sure. The cross-entropy "
    "can then not fall below the entropy of that target."
)
c1, c2 = st.columns(2)
c1.slider("number of classes", 2, 30, key=P + "classes", persist_state="session")
c2.slider("smoothing ε", 0.0, 0.5, step=0.01, key=P + "eps", persist_state="session")
classes = int(st.session_state[P + "classes"])
true_class = min(2, classes - 1)
sm = training.smoothed_target(classes, true_class, float(st.session_state[P + "eps"]))
c1, c2 = st.columns([3, 1])
with c1:
    chart(lc.smoothing_chart(sm.distribution, true_class), "ls_fig")
with c2:
    st.metric("probability on the true class", f"{sm.target_mass:.4f}")
    st.metric("each other class", f"{sm.distribution.min():.4f}")
    st.metric("lowest reachable loss (nats)", f"{sm.loss_floor:.4f}")
st.caption(
    "This follows PyTorch's cross_entropy(label_smoothing=ε): ε/V on every class plus 1 − ε on the "
    "true one. Some write-ups spread ε over the V − 1 other classes instead; the idea is the same."
)

write_state([k for k in DEFAULTS if st.session_state.get(P + k) not in (None, "")], prefix=P)
