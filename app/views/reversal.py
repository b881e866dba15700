"""Reversal explorer: an encoder-decoder that writes its input backwards, head by head."""

import streamlit as st

from attention_lab.charts import component, export
from attention_lab.explorers import decoding
from attention_lab.explorers.head_view import (
    draw_maps,
    grid_columns,
    head_selectors,
    map_sizes,
    names_no_head,
    open_on_lesson,
    split_link,
    weighted_toggle,
)
from attention_lab.explorers.model_input import (
    char_name,
    check_input,
    checkpoint_note,
    outside_training,
    show_input_notes,
    stop_on_problem,
    trained_help,
)
from attention_lab.explorers.reversal_panels import answer, padded_batch, recurrent_panel
from attention_lab.frame import present, state
from attention_lab.models.compute import run_cached, view_cached
from attention_lab.models.explorer_compute import padding_view
from attention_lab.models.inference_switches import NO_POSITIONS, Switch, Switched, switch_toggles
from attention_lab.models.resources import checkpoint_labels, load_model, model_choices
from attention_lab.viewmodel.reversal import DECODINGS, ReversalRequest, reversal_page
from transformer_core import CheckpointError, ConfigError, InferenceOptions, InputError
from transformer_core.beam import MAX_BEAM_WIDTH

P = "rev_"  # session_state prefix; the URL uses the bare names
MAX_CHARS = 30
URL_KEYS = [
    "checkpoint",
    "text",
    "layer",
    "head",
    "nopos",
    "nocausal",
    "nopad",
    "second",
    "decoding",
    "beam",
    "temperature",
    "seed",
    "weighted",
]
SWITCHES = (
    NO_POSITIONS,
    Switch(
        "nocausal",
        "Decoder causal mask off",
        "Let each output position also see the positions after it (red outlines below).",
    ),
    Switch("nopad", "Padding mask off", "Let padded positions of a batch receive attention; see section 4."),
)

st.title("Reversal explorer", anchor=False)
st.caption(
    "An encoder–decoder trained to write a word backwards: the encoder reads the letters, the "
    "decoder writes one at a time, and cross-attention is how each written letter looks back."
)

choices = model_choices("reverse", baselines=True)
if not choices:
    st.warning(
        "No reversal checkpoints found in checkpoints/. Train them with "
        "`bash checkpoints/train_all.sh`, or train one on the Train page."
    )
    state.stop()

default_ckpt = "reverse-sinusoidal" if "reverse-sinusoidal" in choices else choices[0]
unnamed = names_no_head(P)  # then the page opens on the most anti-diagonal head
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
        "decoding": "greedy",
        "beam": 4,
        "temperature": 1.0,
        "seed": 0,
        "weighted": False,
    },
    valid={
        "checkpoint": lambda v: v in choices,
        "layer": lambda v: v >= 0,
        "head": lambda v: v >= 0,
        "decoding": lambda v: v in DECODINGS,
        "beam": lambda v: 1 <= v <= MAX_BEAM_WIDTH,
        "temperature": lambda v: 0.1 <= v <= 2.0,
        "seed": lambda v: 0 <= v < 2**31,
    },
    prefix=P,
)
state.clamp_state(P + "checkpoint", choices, default_ckpt)


projected = present.on()
if projected:  # one 1280x720 screen: the selectors join the inputs, the large head gets the height
    top_left, top_mid, layer_col, head_sel_col = st.columns([1, 1.3, 0.42, 0.42])
    top_right = st.container(horizontal=True, gap="large")
else:
    top_left, top_mid, top_right = st.container(key=P + "inputs").columns([1, 1.5, 1.1])  # 2 + 1: phone
name = top_left.selectbox(
    "Checkpoint",
    choices,
    key=P + "checkpoint",
    persist_state="session",
    format_func=checkpoint_labels(choices),
    help="Same model and training, one per positional scheme. `none` has no way to know letter order.",
)
try:
    ckpt, failure = load_model(name), None
except (CheckpointError, ConfigError, OSError) as e:
    ckpt, failure = None, e
raw = top_mid.text_input(
    f"Text to reverse (letters a–z, at most {MAX_CHARS})",
    key=P + "text",
    persist_state="session",
    help=trained_help(ckpt),
)
switched = Switched(switch_toggles(top_right, P, SWITCHES))
how = decoding.chosen_reversal_decoding(P)  # its controls sit under the first maps
state.write_state(URL_KEYS, prefix=P, keep=("text",))  # before anything can stop the page

if ckpt is None:
    st.error(f"Could not load {name}: {failure}")
    state.stop()
cfg = ckpt.config
st.caption(checkpoint_note(ckpt))

limit = min(MAX_CHARS, cfg.max_len - 2)  # room for <eos> in the source and <sos> in the target
checked = check_input(raw, ckpt.tokenizer, limit, lowercase=True)
stop_on_problem(checked)
state.write_state(URL_KEYS, prefix=P)  # the input was accepted: now the link may carry it
show_input_notes(checked)
text = checked.text
recurrent = cfg.model != "transformer"  # chapter 004's baselines: no heads for the switches to act on
opts = InferenceOptions() if recurrent else switched.options()
cell_px, _ = map_sizes(cfg.n_layers, cfg.n_heads, selectors_above=True)
if projected:  # the answer stands above the grid: a three-line verdict still leaves it on the screen
    cell_px = min(cell_px, 90)
weighted = bool(st.session_state.get(P + "weighted")) and not recurrent  # its toggle is under section 1
request = ReversalRequest(text, opts, how, weighted)
try:
    view = view_cached(reversal_page, name, request)
except (InputError, ConfigError) as e:
    st.error(str(e))
    state.stop()

# ------------------------------------------------------------ the answer
n = len(text)
best, scores = view.best, view.scores
said = {"had_unknown": bool(checked.unknown), "length_note": outside_training(ckpt, n)}
if not projected or recurrent:
    answer(view.trace.output, view.truth, **said)
    if view.beam is not None:
        decoding.beam_search_panel(view.beam, ckpt.tokenizer, n + 2, "letter")
if recurrent:
    st.caption("The switches act on attention heads and positional encodings: this model has neither.")
    decoding.reversal_decoding_controls(P, st, how)
    recurrent_panel(view, ckpt, name)
    state.stop()

# ------------------------------------------------------------ 1 cross
if not projected:  # projected: the lecturer names the section; the large head takes its height
    st.subheader("1 · Cross-attention: where each output step reads the input")
grid_col, head_col = grid_columns()
if projected:
    with grid_col:
        answer(view.trace.output, view.truth, stacked=True, **said)
open_on_lesson(P, (name, text), best, unnamed)
selectors = [layer_col, head_sel_col] if projected else head_col.columns(2)
layer, head = head_selectors(P, cfg.n_layers, cfg.n_heads, selectors)
large = present.HEAD_PX if projected else None
draw_maps(
    view.maps["cross"],
    cell_px=cell_px,
    stem=("reversal", name),
    prefix=P,
    chart="cross",
    layer=layer,
    head=head,
    head_title=f"Layer {layer} head {head} · anti-diagonal {scores[layer, head]:.2f}",
    columns=(grid_col, head_col),
    height=large,
)
st.caption(
    f"Rows are the decoder's steps (from `<sos>`), columns the input letters. Row t writes output "
    f"letter t; to reverse {n} letters it must read input position {n}−1−t: the anti-diagonal. Each "
    "small map's title gives that head's anti-diagonal score, the mean weight on the mirrored letter "
    f"(1.00 = perfect); the most anti-diagonal head is **L{best[0]} H{best[1]}** ({scores[best]:.2f}). "
    "The layer and head chosen here, or by a click on a small map, are drawn large in every section."
    + (" The scores stay those of the attention weights, whatever the maps show." if weighted else "")
)
decoding.reversal_decoding_controls(P, st, how)  # how the output above was written
if not recurrent:  # an additive attention has no W_O: nothing to weigh by, no score to split
    weighted_toggle(P, st)
    split_link(st, name, text, "cross", layer, head)

# ------------------------------------------------------------ 2 decoder
st.subheader("2 · Decoder masked self-attention: what was already written")
if switched["nocausal"]:
    st.caption(
        "The causal mask is **off**: cells above the diagonal are letters not yet written "
        "at that step. Red outlines mark future positions that now get more than 1% of the weight."
    )
else:
    st.caption(
        "Rows are output steps (starting at `<sos>`). The causal mask blanks everything "
        "above the diagonal, so a step only sees what was already written."
    )
draw_maps(
    view.maps["decoder_self"],
    cell_px=cell_px,
    stem=("reversal", name),
    prefix=P,
    chart="dec",
    layer=layer,
    head=head,
    head_title=f"Decoder layer {layer} head {head}",
    mark_future=switched["nocausal"],
    height=large,
)

# ------------------------------------------------------------ 3 encoder
st.subheader("3 · Encoder self-attention: how the input letters see each other")
st.caption(
    "Rows are input positions asking, columns are input positions answering. The encoder "
    "has no mask: every letter may look both ways. `<eos>` marks where the word ends, which "
    "is how position-free schemes can still count from the end."
)
draw_maps(
    view.maps["encoder_self"],
    cell_px=cell_px,
    stem=("reversal", name),
    prefix=P,
    chart="enc",
    layer=layer,
    head=head,
    head_title=f"Encoder layer {layer} head {head}",
    height=large,
)

# ------------------------------------------------------------ 4 padding
st.subheader("4 · Padding: two inputs of different lengths in one batch")
st.caption(
    "Batches need equal lengths, so the shorter input is filled up with `<pad>`. The padding "
    "mask stops every position from attending to those fillers: with it on, `<pad>` columns get "
    "exactly 0. Switch **Padding mask off** above to see them soak up weight."
)
raw2 = st.text_input("Second input for the batch", key=P + "second", persist_state="session")
checked2 = check_input(raw2, ckpt.tokenizer, limit, lowercase=True)
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
            + ", ".join(char_name(c) for c in checked2.unknown)
        )
    pv = run_cached(padding_view, name, (text, checked2.text), opts)
    padded_batch(P, name, pv, layer, head)

# ------------------------------------------------------------ downloads
st.subheader("Take the numbers with you")
st.caption(
    "PNG and SVG: the buttons under each chart (on hover or focus). The files hold every head's weights as "
    "[layer][head][query][key], the same layout as `python -m transformer_core trace --json`."
)
component.download_buttons(
    P,
    export.file_stem("reversal", name, f"L{layer}H{head}", text),
    name,
    view.trace,
    unknown_characters=checked.unknown,
    options=switched.as_json(),
)
state.write_state(URL_KEYS, prefix=P)
