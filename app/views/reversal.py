"""Reversal explorer: an encoder-decoder that writes its input backwards, head by head."""

import html

import numpy as np
import streamlit as st
from lab import charts, export, state
from lab import explorer as ex
from lab.compute import run_cached
from lab.resources import load_model, model_choices

from transformer_core import CheckpointError, ConfigError, InferenceOptions, InputError

P = "rev_"  # session_state prefix; the URL uses the bare names
MAX_CHARS = 30
URL_KEYS = ["checkpoint", "text", "layer", "head", "nopos", "nocausal", "nopad", "second"]

st.title("Reversal explorer")
st.caption(
    "An encoder–decoder trained to write a word backwards: the encoder reads the letters, the "
    "decoder writes one at a time, and cross-attention is how each written letter looks back."
)

choices = model_choices("reverse")
if not choices:
    st.warning(
        "No reversal checkpoints found in checkpoints/. Train them with "
        "`bash checkpoints/train_all.sh`, or train one on the Train page."
    )
    st.stop()

default_ckpt = "reverse-sinusoidal" if "reverse-sinusoidal" in choices else choices[0]
state.init_state(
    {
        "checkpoint": default_ckpt,
        "text": "attention",
        "layer": 0,
        "head": 0,
        "nopos": False,
        "nocausal": False,
        "nopad": False,
        "second": "abc",
    },
    valid={"checkpoint": lambda v: v in choices, "layer": lambda v: v >= 0, "head": lambda v: v >= 0},
    prefix=P,
)
ex.clamp_state(P + "checkpoint", choices, default_ckpt)


def correctness_html(output: str, expected: str) -> str:
    """Each output letter in a box: green where it matches the true reverse, red where not."""
    cells = []
    for i in range(max(len(output), len(expected))):
        got = output[i] if i < len(output) else "·"
        ok = i < len(output) and i < len(expected) and output[i] == expected[i]
        colour = "#dcfce7" if ok else "#fee2e2"
        border = "#16a34a" if ok else "#dc2626"
        cells.append(
            f'<span style="display:inline-block;min-width:1.4em;text-align:center;margin:1px;'
            f"padding:2px 4px;background:{colour};border:1px solid {border};border-radius:4px;"
            f'font-family:monospace;font-size:1.3rem">{html.escape(got)}</span>'
        )
    return "".join(cells)


top_left, top_mid, top_right = st.columns([1, 1.5, 1.1])
name = top_left.selectbox(
    "Checkpoint",
    choices,
    key=P + "checkpoint",
    help="Same model and training, one per positional scheme. `none` has no way to know letter order.",
)
raw = top_mid.text_input(f"Text to reverse (letters a–z, at most {MAX_CHARS})", key=P + "text")
nopos = top_right.toggle(
    "Drop positional information",
    key=P + "nopos",
    help="Run the same weights without any position signal (no added codes, no RoPE, no ALiBi).",
)
nocausal = top_right.toggle(
    "Decoder causal mask off",
    key=P + "nocausal",
    help="Let each output position also see the positions after it (red outlines below).",
)
nopad = top_right.toggle(
    "Padding mask off",
    key=P + "nopad",
    help="Let padded positions of a batch receive attention; see section 4.",
)
state.write_state(URL_KEYS, prefix=P, keep=("text",))  # before anything can stop the page

try:
    ckpt = load_model(name)
except (CheckpointError, ConfigError, OSError) as e:
    st.error(f"Could not load {name}: {e}")
    st.stop()
cfg = ckpt.config
st.caption(ex.checkpoint_note(ckpt))

limit = min(MAX_CHARS, cfg.max_len - 2)  # room for <eos> in the source and <sos> in the target
checked = ex.check_input(raw, ckpt.tokenizer, limit, lowercase=True)
if checked.problem:
    (st.warning if not raw else st.error)(checked.problem, icon=":material/error:")
    state.stopped_early()
    st.stop()
state.write_state(URL_KEYS, prefix=P)  # the input was accepted: now the link may carry it
ex.show_input_notes(checked)
text = checked.text
opts = InferenceOptions(causal=not nocausal, padding_mask=not nopad, positions=not nopos)
try:
    view = run_cached(ex.reversal_view, name, text, opts)
except (InputError, ConfigError) as e:
    st.error(str(e))
    st.stop()

# ------------------------------------------------------------ the answer
expected = text[::-1]
answer, verdict = st.columns([1.1, 1], vertical_alignment="center")
with answer:  # the greedy output: the most likely letter at each step
    st.html(
        '<span style="font-size:0.9rem;color:#6b7280;margin-right:6px">output</span>'
        + correctness_html(view.output, expected)
    )
with verdict:
    if view.output == expected:
        st.success(
            f"Correct: {ex.md_code(ex.visible(view.output))} is the input reversed.",
            icon=":material/check_circle:",
        )
    else:
        extra = " Characters replaced by `<unk>` cannot come back." if checked.unknown else ""
        st.warning(
            f"Not the reverse: the true reverse is {ex.md_code(ex.visible(expected))}, the model wrote "
            f"{ex.md_code(ex.visible(view.output)) if view.output else '(nothing)'}.{extra}",
            icon=":material/cancel:",
        )

n = len(text)
scores = ex.anti_diagonal_scores(view.attention["cross"], n)
best = np.unravel_index(int(scores.argmax()), scores.shape)
plain_titles = [[f"L{l} H{h}" for h in range(cfg.n_heads)] for l in range(cfg.n_layers)]

# ------------------------------------------------------------ 1 cross
st.subheader("1 · Cross-attention: where each output step reads the input")
grid_col, head_col = ex.grid_columns()
layer, head = ex.head_selectors(P, cfg.n_layers, cfg.n_heads, head_col.columns(2))
titles = [[f"L{l} H{h} · {scores[l, h]:.2f}" for h in range(cfg.n_heads)] for l in range(cfg.n_layers)]
ex.grid_and_head(
    name,
    text,
    opts,
    "cross",
    prefix=P,
    chart="cross",
    layer=layer,
    head=head,
    head_title=f"Layer {layer} head {head} · anti-diagonal {scores[layer, head]:.2f}",
    cell_titles=titles,
    columns=(grid_col, head_col),
)
st.caption(
    f"Rows are the decoder's steps (from `<sos>`), columns the input letters. Row t writes output "
    f"letter t; to reverse {n} letters it must read input position {n}−1−t: the anti-diagonal. Each "
    "small map's title gives that head's anti-diagonal score, the mean weight on the mirrored letter "
    f"(1.00 = perfect); the most anti-diagonal head is **L{best[0]} H{best[1]}** ({scores[best]:.2f}). "
    "The layer and head chosen here, or by a click on a small map, are drawn large in every section."
)

# ------------------------------------------------------------ 2 decoder
st.subheader("2 · Decoder masked self-attention: what was already written")
if nocausal:
    st.caption(
        "The causal mask is **off**: cells above the diagonal are letters not yet written "
        "at that step. Red outlines mark future positions that now get more than 1% of the weight."
    )
else:
    st.caption(
        "Rows are output steps (starting at `<sos>`). The causal mask blanks everything "
        "above the diagonal, so a step only sees what was already written."
    )
ex.grid_and_head(
    name,
    text,
    opts,
    "decoder_self",
    prefix=P,
    chart="dec",
    layer=layer,
    head=head,
    head_title=f"Decoder layer {layer} head {head}",
    cell_titles=plain_titles,
    mark_future=nocausal,
)

# ------------------------------------------------------------ 3 encoder
st.subheader("3 · Encoder self-attention: how the input letters see each other")
st.caption(
    "Rows are input positions asking, columns are input positions answering. The encoder "
    "has no mask: every letter may look both ways. `<eos>` marks where the word ends, which "
    "is how position-free schemes can still count from the end."
)
ex.grid_and_head(
    name,
    text,
    opts,
    "encoder_self",
    prefix=P,
    chart="enc",
    layer=layer,
    head=head,
    head_title=f"Encoder layer {layer} head {head}",
    cell_titles=plain_titles,
)

# ------------------------------------------------------------ 4 padding
st.subheader("4 · Padding: two inputs of different lengths in one batch")
st.caption(
    "Batches need equal lengths, so the shorter input is filled up with `<pad>`. The padding "
    "mask stops every position from attending to those fillers: with it on, `<pad>` columns get "
    "exactly 0. Switch **Padding mask off** above to see them soak up weight."
)
raw2 = st.text_input("Second input for the batch", key=P + "second")
checked2 = ex.check_input(raw2, ckpt.tokenizer, limit, lowercase=True)
if checked2.problem:
    st.warning(f"Second input: {checked2.problem}", icon=":material/error:")
elif len(checked2.text) == len(text):
    st.info(
        "Both inputs have the same length, so nothing is padded: give the second input a different length.",
        icon=":material/info:",
    )
else:
    if checked2.unknown:
        st.caption(
            "Second input: not in the vocabulary, replaced by `<unk>`: "
            + ", ".join(ex.char_name(c) for c in checked2.unknown)
        )
    pv = run_cached(ex.padding_view, name, (text, checked2.text), opts)
    cols = st.columns(2)
    for b, col in enumerate(cols):
        w = pv.attention[b, layer, head]
        real = ~pv.is_pad[b]
        pad_share = float(w[real][:, pv.is_pad[b]].sum(-1).max()) if pv.is_pad[b].any() else 0.0
        with col:
            mark = pv.is_pad[b][None, :] & (w > 0.001)
            spec = charts.head_spec(
                w,
                pv.tokens[b],
                pv.tokens[b],
                f"Row {b + 1}: encoder layer {layer} head {head}",
                highlight=mark,
                highlight_name="weight on <pad>",
                height=380,
                file=export.file_stem("reversal", name, "padding", f"row{b + 1}", f"L{layer}H{head}"),
            )
            charts.show(spec, key=f"{P}pad{b}")
            if pv.is_pad[b].any():
                st.caption(
                    f"Row {b + 1} has {int(pv.is_pad[b].sum())} `<pad>`; the most weight any real "
                    f"letter puts on them: **{pad_share:.3f}**. "
                    f"Output: {ex.md_code(ex.visible(pv.outputs[b] or '(nothing)'))} "
                    f"(true reverse {ex.md_code(ex.visible(pv.texts[b][::-1]))})."
                )
            else:
                st.caption(
                    f"Row {b + 1} is the longer input: no padding. Output: "
                    f"{ex.md_code(ex.visible(pv.outputs[b] or '(nothing)'))} "
                    f"(true reverse {ex.md_code(ex.visible(pv.texts[b][::-1]))})."
                )

# ------------------------------------------------------------ downloads
st.subheader("Take the numbers with you")
st.caption(
    "PNG: the button at the top right of each chart (hover over it). The files hold every head's weights as "
    "[layer][head][query][key], the same layout as `python -m transformer_core trace --json`."
)
ex.download_buttons(
    P,
    export.file_stem("reversal", name, f"L{layer}H{head}", text),
    name,
    view,
    unknown_characters=checked.unknown,
    options={"causal": not nocausal, "padding_mask": not nopad, "positions": not nopos},
)
state.write_state(URL_KEYS, prefix=P)
