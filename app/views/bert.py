"""BERT versus GPT: a masked-language model fills hidden characters reading both sides; a GPT
reads left to right. Same corpus, same size, one text."""

import numpy as np
import pandas as pd
import streamlit as st

from attention_lab.charts import component, export
from attention_lab.explorers.head_view import (
    draw_maps,
    grid_columns,
    head_selectors,
    names_no_head,
    open_on_lesson,
)
from attention_lab.explorers.model_input import (
    check_input,
    checkpoint_note,
    show_input_notes,
    stop_on_problem,
)
from attention_lab.frame import state, tables
from attention_lab.models.bert_compute import gpt_guesses, held_out_accuracy, held_out_chance
from attention_lab.models.compute import run_cached, view_cached
from attention_lab.models.explorer_compute import gpt_view
from attention_lab.models.resources import (
    checkpoint_labels,
    installed_models,
    load_model,
    model_choices,
    shipped_checkpoints,
)
from attention_lab.viewmodel.attention import head_figure
from attention_lab.viewmodel.bert import BOTH_WAYS, bert_page
from transformer_core import CheckpointError, ConfigError, InferenceOptions, InputError
from transformer_core.interp.fill import MASK_MARK, Guess, mark_masks, show_masks
from transformer_core.io.data import MASK_CHAR

P = "bert_"  # session_state prefix; the URL uses the bare names
URL_KEYS = ["checkpoint", "gpt", "text", "layer", "head"]
DEFAULT_TEXT = "The ret[MASK]rn statement leaves the current f[MASK]nction call."

st.title("BERT versus GPT", anchor=False)
st.caption(
    "Two character models trained on the same text (Python's documentation) at the same size. "
    "BERT learned to fill in hidden characters and reads the whole text at once; GPT learned to "
    f"continue text and reads only what came before. Write {MASK_MARK} where a character is hidden."
)

choices = model_choices("mlm")
metas = {**shipped_checkpoints(), **installed_models()}  # a BPE model's positions are not characters
gpts = [
    n
    for n in model_choices("lm")
    if n != "gpt-induction" and (metas.get(n, {}).get("tokenizer") or {}).get("kind") != "bpe"
]  # the induction GPT knows 26 letters; an imported GPT-2 reads pieces of words
if not choices or not gpts:
    st.warning(
        "This page needs `bert-char` and a character GPT in checkpoints/. Train them with "
        "`bash checkpoints/train_all.sh`, or train a masked language model on the Train page."
    )
    state.stop()
default_bert = "bert-char" if "bert-char" in choices else choices[0]
unnamed = names_no_head(P)  # then the page opens on the head that reads ahead the most
default_gpt = "gpt-rope" if "gpt-rope" in gpts else gpts[0]  # RoPE, as bert-char
state.init_state(
    {"checkpoint": default_bert, "gpt": default_gpt, "text": DEFAULT_TEXT, "layer": 0, "head": 0},
    valid={
        "checkpoint": lambda v: v in choices,
        "gpt": lambda v: v in gpts,
        "layer": lambda v: v >= 0,
        "head": lambda v: v >= 0,
    },  # fmt: skip
    prefix=P,
)
state.clamp_state(P + "checkpoint", choices, default_bert)
state.clamp_state(P + "gpt", gpts, default_gpt)

left, mid, right = st.columns([1, 2, 1])
name = left.selectbox(
    "Masked language model",
    choices,
    key=P + "checkpoint",
    persist_state="session",
    format_func=checkpoint_labels(choices),
    help="bert-char, then your own runs of the masked-language-model task.",
)
raw = mid.text_area(
    "Text, with [MASK] for each hidden character",
    key=P + "text",
    persist_state="session",
    height=90,
    help=f"Each {MASK_MARK} hides one character. Characters the models never saw become <unk>.",
)
gpt_name = right.selectbox(
    "GPT to compare",
    gpts,
    key=P + "gpt",
    persist_state="session",
    format_func=checkpoint_labels(gpts),
    help="A character GPT trained on the same text: it guesses each hidden character from its left.",
)
state.write_state(URL_KEYS, prefix=P, keep=("text",))
try:
    bert, gpt = load_model(name), load_model(gpt_name)
except (CheckpointError, ConfigError, OSError) as e:
    st.error(f"Could not load the models: {e}")
    state.stop()
st.caption(checkpoint_note(bert))

checked = check_input(mark_masks(raw), bert.tokenizer, bert.config.max_len)
stop_on_problem(checked)
state.write_state(URL_KEYS, prefix=P)
show_input_notes(checked)
text = checked.text
try:
    page = view_cached(bert_page, name, text)
except (InputError, ConfigError) as e:
    st.error(str(e))
    state.stop()
fill = page.fill
left_only = run_cached(gpt_guesses, gpt_name, text, page.hidden)

# ---------------------------------------------------------------- 1 the blanks
st.subheader("1 · Fill in the blanks")
if not page.hidden:
    st.info(
        f"Nothing is hidden yet: write {MASK_MARK} in place of a character (for example "
        f"`f{MASK_MARK}nction`) to see both models guess it. The maps below read your text as it is.",
        icon=":material/visibility_off:",
    )
else:

    def guesses(g: Guess) -> str:
        shown = ", ".join(f"'{c}' {p:.0%}" if p >= 0.005 else f"'{c}' <1%" for c, p in g.candidates[:3])
        return shown or "nothing to read: no character on its left"

    rows = [
        {
            "position": g.position,
            "around it": show_masks(text[max(0, g.position - 6) : g.position + 7]),
            "BERT (both sides)": guesses(g),
            "GPT (left only)": guesses(gl),
        }
        for g, gl in zip(fill.guesses, left_only, strict=True)
    ]
    tables.show(pd.DataFrame(rows), key=P + "guesses", index=False)
    filled_gpt = list(text)
    for g in left_only:
        filled_gpt[g.position] = g.best or MASK_CHAR
    st.markdown(
        f"BERT fills in: `{fill.filled}`  \nGPT fills in: `{''.join(filled_gpt)}`  \n"
        "Three most likely characters each, with their probability. BERT sees the characters on "
        "both sides of a blank (and that the other blanks are hidden); GPT, trained to predict the "
        "next character, only has the ones before it."
    )

# ---------------------------------------------------------------- 2 every head
st.subheader("2 · Every head reads both ways")
grid_col, head_col = grid_columns()
open_on_lesson(P, name, np.unravel_index(page.ahead.argmax(), page.ahead.shape), unnamed)
layer, head = head_selectors(P, bert.config.n_layers, bert.config.n_heads, head_col.columns(2))
state.write_state(URL_KEYS, prefix=P)
draw_maps(
    page.maps,
    stem=("bert", name),
    prefix=P,
    chart="self",
    layer=layer,
    head=head,
    head_title=f"BERT layer {layer} head {head}",
    columns=(grid_col, head_col),
)
ahead = page.ahead
st.caption(
    "Rows are the characters asking (queries), columns the characters answering (keys); one colour "
    "scale. There is no causal mask, so weight lands on both sides of the diagonal: on average "
    f"BERT's heads give {ahead.mean():.0%} of each character's attention to characters after it "
    f"(from {ahead.min():.0%} to {ahead.max():.0%} by head, table below). A GPT's give exactly 0%."
)
tables.show(
    pd.DataFrame(
        np.round(100 * ahead, 1),
        index=[f"layer {l}" for l in range(len(ahead))],
        columns=[f"head {h}" for h in range(ahead.shape[1])],
    ),
    key=P + "ahead",
    formats={f"head {h}": "{:.1f}%" for h in range(ahead.shape[1])},
)

# ---------------------------------------------------------------- 3 full versus causal
st.subheader("3 · Full attention beside causal attention")
view = run_cached(gpt_view, gpt_name, text, InferenceOptions(), None)
g_layer, g_head = min(layer, gpt.config.n_layers - 1), min(head, gpt.config.n_heads - 1)
full_col, causal_col = st.columns(2, gap="medium")
for where, trace, who, (l, h), label in (
    (full_col, fill.trace, f"BERT ({name})", (layer, head), BOTH_WAYS),
    (causal_col, view.trace, f"GPT ({gpt_name})", (g_layer, g_head), None),
):
    spec = head_figure(
        trace,
        "self",
        InferenceOptions(),
        l,
        h,
        title=f"{who}: layer {l} head {h}",
        mark_future=False,
        height=420,
        file=export.file_stem("bert", name, gpt_name, who.split()[0], f"L{l}H{h}"),
        label=label,
    )
    component.show(spec, key=f"{P}side_{who.split()[0]}", where=where)
st.caption(
    f"The same text, the same layer and head: the GPT's map is empty above the diagonal (the causal "
    f"mask), BERT's is not. The GPT reads each {MASK_MARK} as a character it does not know (<unk>)."
)

# ---------------------------------------------------------------- 4 measured
st.subheader("4 · Measured on held-out text")
bert_acc = run_cached(held_out_accuracy, name)
gpt_acc = run_cached(held_out_accuracy, gpt_name)
chance, blanks = held_out_chance()
tables.show(
    pd.DataFrame(
        [
            {"reader": f"BERT ({name}): both sides", "hidden characters guessed right": bert_acc},
            {"reader": f"GPT ({gpt_name}): left only", "hidden characters guessed right": gpt_acc},
            {"reader": "chance: always the most common character", "hidden characters guessed right": chance},
        ]
    ),
    key=P + "measured",
    index=False,
    formats={"hidden characters guessed right": "{:.1%}"},
)
st.caption(
    "The last 10% of the training text, which neither model trained on: 256 windows of 64 characters "
    f"with 15% of the characters hidden as in BERT's training (fixed seed), {blanks:,} blanks, never the "
    "first of a window (the GPT has nothing to read there). BERT reads each window with its blanks "
    "hidden; the GPT reads the true characters on the left of each blank."
)

# ---------------------------------------------------------------- downloads
st.subheader("Take the numbers with you")
component.download_buttons(
    P,
    export.file_stem("bert", name, f"L{layer}H{head}", "attention"),
    name,
    fill.trace,
    unknown_characters=checked.unknown,
    guesses=[{"position": g.position, "candidates": g.candidates} for g in fill.guesses],
)
