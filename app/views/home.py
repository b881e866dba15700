"""Home: what the lab is, the device, the shipped models and a card per page."""

import pandas as pd
import streamlit as st

from attention_lab.frame import state, tables
from attention_lab.models.resources import current_device, shipped_checkpoints
from transformer_core import describe_device, perplexity

st.title("Attention Lab", anchor=False)
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
    (
        "compare",
        "Side by side",
        "One input through two models or two switch settings, on one colour scale, with the difference.",
    ),
    (
        "heads",
        "Heads you can read",
        "Every head scored: previous-token, induction, anti-diagonal; ablation sweep, rollout, logit lens.",
    ),
    (
        "bert",
        "BERT versus GPT",
        "A masked-language model fills hidden characters reading both ways; a GPT reads the left only.",
    ),
    ("positions", "Positional encodings", "Sinusoidal, learned, RoPE and ALiBi: tables, rotations, biases."),
    ("variance", "Why divide by √d_k", "Score variance grows with d_k; watch softmax saturate."),
    ("cost", "What attention costs", "Parameters, FLOPs and memory by part, measured; the KV cache."),
    ("train", "Train a model", "Train reversal, a character LM or induction heads and watch the heads form."),
]
columns = st.columns(3)
for i, (path, title, text) in enumerate(CARDS):
    with columns[i % 3].container(border=True):
        st.page_link(f"views/{path}.py", label=title, query_params=state.link_params(path))
        st.caption(text)

st.subheader("Shipped models")
reversal_rows, gpt_rows, bert_rows = [], [], []
for name, meta in shipped_checkpoints().items():
    m = meta.get("metrics", {})
    cfg = meta.get("config", {})
    row = {
        "checkpoint": name,
        "positions": cfg.get("positions"),
        "size": f"d {cfg.get('d_model')} · {cfg.get('n_layers')} L · {cfg.get('n_heads')} H",
        "parameters": meta.get("parameters"),
    }
    if meta.get("task") == "lm":
        for column, key in (("val", "val_loss"), ("repeat", "loss_repeat")):
            loss = m.get(key)
            row[f"{column} loss"] = loss
            row[f"{column} perplexity"] = None if loss is None else perplexity(loss)
        gpt_rows.append(row)
    elif meta.get("task") == "mlm":
        row["hidden characters right"] = m.get("masked_accuracy")
        row["chance"] = m.get("chance_accuracy")
        bert_rows.append(row)
    else:
        row.update({f"len {k}": v for k, v in m.get("exact_match", {}).items()})
        reversal_rows.append(row)
PARAMETERS = {"parameters": lambda n: f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"}
if reversal_rows:
    st.markdown("**Reversal (encoder-decoder)**: greedy exact match per string length (trained on 3 to 10)")
    lengths = [k for k in reversal_rows[0] if k.startswith("len ")]
    tables.show(
        pd.DataFrame(reversal_rows),
        key="home_reversal",
        index=False,
        digits=2,
        formats=PARAMETERS,
    )
if gpt_rows:
    st.markdown(
        "**Character GPT**: validation loss, and the loss on a repeated segment (induction model), in "
        "nats, each with its perplexity (e^loss: a choice among that many equally likely characters)"
    )
    tables.show(
        pd.DataFrame(gpt_rows),
        key="home_gpt",
        index=False,
        digits=3,
        formats=PARAMETERS,
    )
if bert_rows:
    st.markdown(
        "**Masked language model (BERT)**: held-out characters hidden as in its training, the share it "
        "fills in right, beside always guessing the commonest character"
    )
    tables.show(pd.DataFrame(bert_rows), key="home_bert", index=False, digits=3, formats=PARAMETERS)
if not reversal_rows and not gpt_rows:
    st.warning("No shipped checkpoints found in checkpoints/: run `bash checkpoints/train_all.sh`.")
state.write_state([])  # the page reads no parameters: a link's others are dropped (present and a tour's stay)
