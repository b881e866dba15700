"""Home: what the lab is, the device, the shipped models and a card per page."""

import streamlit as st
from lab.resources import current_device, shipped_checkpoints

from transformer_core import describe_device

st.title("Attention Lab")
st.markdown(
    "Watch a Transformer's attention **live**. Type text, switch masks and positional "
    "schemes on trained models, see every head of every layer, and train your own model "
    "while its heads form."
)
st.caption(f"Running on **{describe_device(current_device())}**")

CARDS = [  # (page, title, what it shows)
    (
        "gpt",
        "GPT explorer",
        "A character-level GPT: generate text, see every self-attention head, "
        "walk one query through q·k → scale → mask → softmax → Σv, ablate heads.",
    ),
    (
        "reversal",
        "Reversal explorer",
        "An encoder-decoder that reverses strings: encoder, masked decoder "
        "and cross-attention grids, and the anti-diagonal that does the work.",
    ),
    (
        "basics",
        "Attention basics",
        "Queries, keys and values by hand: the seeds' worked numbers, "
        "masked softmax, kernel regression, multi-head.",
    ),
    ("positions", "Positional encodings", "Sinusoidal, learned, RoPE and ALiBi: tables, rotations, biases."),
    ("variance", "Why divide by √d_k", "Score variance grows with d_k; watch softmax saturate."),
    ("train", "Train a model", "Train reversal or a character LM in the browser and watch the heads form."),
]
columns = st.columns(3)
for i, (path, title, text) in enumerate(CARDS):
    with columns[i % 3].container(border=True):
        st.page_link(f"views/{path}.py", label=title)
        st.caption(text)

st.subheader("Shipped models")
rows = []
for name, meta in shipped_checkpoints().items():
    m = meta.get("metrics", {})
    cfg = meta.get("config", {})
    if meta.get("task") == "lm":
        quality = f"val loss {m.get('val_loss', float('nan')):.3f} nats/char"
    else:
        em = m.get("exact_match", {})
        quality = "exact match " + ", ".join(f"len {k}: {v:.2f}" for k, v in em.items())
    rows.append(
        {
            "checkpoint": name,
            "positions": cfg.get("positions"),
            "size": f"d={cfg.get('d_model')} · {cfg.get('n_layers')} layers · {cfg.get('n_heads')} heads",
            "parameters": meta.get("parameters"),
            "quality": quality,
        }
    )
if rows:
    st.dataframe(rows, hide_index=True, width="stretch")
else:
    st.warning("No shipped checkpoints found in checkpoints/: run `bash checkpoints/train_all.sh`.")
