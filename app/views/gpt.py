"""GPT explorer: sample from a character-level GPT and open up every self-attention head."""

import re

import streamlit as st

from attention_lab.charts import component, export
from attention_lab.explorers import decoding, gpt_panels
from attention_lab.explorers.head_view import (
    draw_maps,
    grid_columns,
    head_selectors,
    names_no_head,
    open_on_lesson,
    split_link,
    weighted_toggle,
)
from attention_lab.explorers.model_input import (
    check_input,
    checkpoint_note,
    show_input_notes,
    stop_on_problem,
    token_unit,
)
from attention_lab.frame import state
from attention_lab.models.compute import run_cached, view_cached
from attention_lab.models.explorer_compute import gpt_view, lesson_head, output_projection, step_probs
from attention_lab.models.inference_switches import (
    NO_POSITIONS,
    Switch,
    Switched,
    ablation_picker,
    head_name,
    switch_toggles,
    window_picker,
    window_value,
)
from attention_lab.models.resources import checkpoint_labels, load_model, model_choices
from attention_lab.viewmodel.gpt import GPTRequest, gpt_page
from transformer_core import POSITION_SCHEMES, CheckpointError, ConfigError, InputError
from transformer_core.beam import DEFAULT_ALPHA, MAX_BEAM_WIDTH
from transformer_core.interp import head_merge, query_steps

P = "gpt_"  # session_state prefix; the URL uses the bare names
URL_KEYS = [
    "checkpoint",
    "text",
    "layer",
    "head",
    "query",
    "nopos",
    "nocausal",
    "window",
    "ablate",
    "max_new",
    "temperature",
    "top_k",
    "top_p",
    "seed",
    "sampled",
    "decoding",
    "beam",
    "alpha",
    "weighted",
]
DEFAULT_PROMPT = "The with statement is used to"
SWITCHES = (
    NO_POSITIONS,
    Switch(
        "nocausal",
        "Causal mask off",
        "Let every character see the ones after it (red outlines in the head view).",
    ),
)

st.title("GPT explorer", anchor=False)
st.caption(
    "A character-level GPT trained on Python's documentation (or a model your admin imported, such as "
    "GPT-2: the line under the prompt says which). Type a prompt, see where every head "
    "looks, then what the model writes next."
)

choices = model_choices("lm")
if not choices:
    st.warning(
        "No GPT checkpoints found in checkpoints/. Train them with "
        "`bash checkpoints/train_all.sh`, or train one on the Train page."
    )
    state.stop()

default_ckpt = "gpt-sinusoidal" if "gpt-sinusoidal" in choices else choices[0]
unnamed = names_no_head(P)  # then the page opens on the model's strongest previous-token or induction head
state.name_later(P + "query")  # a link's unusable query is named by its character (gpt_panels.query_picker)
state.init_state(
    {
        "checkpoint": default_ckpt,
        "text": DEFAULT_PROMPT,
        "layer": 0,
        "head": 0,
        "query": -1,
        "nopos": False,
        "nocausal": False,
        "window": 0,
        "ablate": [],
        "max_new": decoding.DEFAULT_NEW["character"],
        "temperature": 0.8,
        "top_k": 0,
        "top_p": 1.0,
        "seed": 0,
        "sampled": False,
        "decoding": "sample",
        "beam": 4,
        "alpha": DEFAULT_ALPHA,
        "weighted": False,
    },
    valid={
        "checkpoint": lambda v: v in choices,
        "layer": lambda v: v >= 0,
        "head": lambda v: v >= 0,
        "query": lambda v: v >= 0,
        "window": lambda v: 0 <= v <= 4096,
        "ablate": lambda v: all(re.fullmatch(r"\d+\.\d+", a) for a in v),
        "max_new": lambda v: 1 <= v <= 200,
        "temperature": lambda v: v == 0.0 or 0.05 <= v <= 2.0,  # 0: greedy; 1e-49 overflowed the softmax
        "top_k": lambda v: v >= 0,
        "top_p": lambda v: 0.05 <= v <= 1.0,
        "seed": lambda v: 0 <= v < 2**31,
        "decoding": lambda v: v in decoding.DECODINGS,
        "beam": lambda v: 1 <= v <= MAX_BEAM_WIDTH,
        "alpha": lambda v: 0.0 <= v <= 2.0,
    },
    prefix=P,
)
state.clamp_state(P + "checkpoint", choices, default_ckpt)

# ---------------------------------------------------------------- prompt, model, switches
top_left, top_mid, top_right = st.container(key=P + "inputs").columns([1, 1.5, 1.25])  # 2 + 1 on a phone
name = top_left.selectbox(
    "Checkpoint",
    choices,
    key=P + "checkpoint",
    persist_state="session",
    format_func=checkpoint_labels(choices),
    help="The same model trained once per positional scheme; then your own runs.",
)
raw = top_mid.text_area(
    "Prompt",
    key=P + "text",
    persist_state="session",
    height=112,
    help="Any text; characters the model never saw become <unk>.",
)
off = switch_toggles(top_right, P, SWITCHES)
try:
    ckpt = load_model(name)
except (CheckpointError, ConfigError, OSError) as e:
    state.write_state(URL_KEYS, prefix=P, keep=("text",))
    st.error(f"Could not load {name}: {e}")
    state.stop()
cfg = ckpt.config
unit = token_unit(ckpt.tokenizer)  # what a position is: "character", or "token" for a BPE model
switched = Switched(
    off, ablation_picker(top_left, P, cfg.n_layers, cfg.n_heads), window_value(P, cfg.max_len)
)  # its window's widget is drawn under the maps it bands
state.write_state(URL_KEYS, prefix=P, keep=("text",))  # before anything can stop the page
st.caption(checkpoint_note(ckpt) + " · the switches apply to sampling and to the attention below")

checked = check_input(raw, ckpt.tokenizer, cfg.max_len)
stop_on_problem(checked)
state.write_state(URL_KEYS, prefix=P)  # the prompt was accepted: now the link may carry it
show_input_notes(checked)
text, opts = checked.text, switched.options()

# ---------------------------------------------------------------- 1 every head
title_col, toggle_col = st.columns([3, 2], vertical_alignment="bottom")  # one line: the grid stays on screen
title_col.subheader("1 · Every head at once")
with toggle_col:
    over_sample = gpt_panels.sample_toggle(P)
heads_area = st.container()  # filled below, once the sample (section 2) is known: the maps may trace it

# ---------------------------------------------------------------- 2 sampling
st.subheader("2 · What the model writes next")
settings, beam = decoding.decoding_settings(P, len(ckpt.tokenizer), unit)
weighted = bool(st.session_state.get(P + "weighted"))  # its toggle is drawn under the maps it changes
request = GPTRequest(text, opts, settings, over_sample, tuple(sorted(switched.ablate or ())), beam, weighted)
try:
    page = view_cached(gpt_page, name, request)  # one traced pass that sampling goes on from
except (InputError, ConfigError) as e:
    st.error(str(e))
    state.stop()
prompt_view, samples, window, view = page.prompt, page.samples, page.window, page.view
continuation = page.continuation

with heads_area:  # ---------------------------------------- 1 every head, on the traced text
    if window:
        gpt_panels.window_note(window, len(samples), cfg.max_len, unit)
    grid_col, head_col = grid_columns()
    open_on_lesson(P, name, run_cached(lesson_head, name), unnamed)
    layer, head = head_selectors(P, cfg.n_layers, cfg.n_heads, head_col.columns(2))
    draw_maps(
        page.maps,
        stem=("gpt", name),
        prefix=P,
        chart="self",
        layer=layer,
        head=head,
        head_title=f"Layer {layer} head {head}" + (" · prompt + sample" if window else ""),
        mark_future=switched["nocausal"],
        columns=(grid_col, head_col),
    )
    st.caption(
        "One small map per layer (row) and head (column), all on one colour scale: rows are the "
        f"{unit}s asking (queries), columns the {unit}s answering (keys). Click a map, or use "
        "the selectors, to draw that head large with exact weights on hover."
        + (
            " Causal mask **off**: red outlines mark characters *after* the query that now get more "
            "than 1% of its attention: the model peeks at the future it never saw in training."
            if switched["nocausal"]
            else ""
        )
        + (
            f" Sliding window **{switched.window}**: each query reads only its {switched.window} most recent "
            f"{unit}{'s' if switched.window > 1 else ''}, so every map is a band along its diagonal; "
            "the cells further back are empty."
            if switched.window
            else ""
        )
        + (
            " **Value-weighted**: each cell is the key's share of what the query receives, "
            "‖α·v·W_O‖ over its row's sum: a key with a large weight but a value the head maps to "
            "little sends little."
            if weighted
            else ""
        )
    )
    window_col, weighted_col = st.columns([1, 3], vertical_alignment="bottom")
    window_picker(window_col, P, cfg.max_len)  # it bands the maps above and the sampling below
    weighted_toggle(P, weighted_col)
    split_link(st, name, text, "self", layer, head)

# ---------------------------------------------------------------- 2 sampling (continued)
text_col, next_col = st.columns([1.5, 1], gap="medium")
with text_col:
    gpt_panels.sampled_text(P, text, checked.unknown, samples, unit)
    if window:  # a sampled character explained: its query row and the alternatives it beat
        picked = gpt_panels.sampled_picker(P, window, view.tokens, samples, unit)
        row = view.attention[layer, head, picked - 1]
        gpt_panels.explain_sampled(window, view.tokens, samples, picked, row, (layer, head))
with next_col:  # the next character (after the prompt, or the picked one), and what an ablation changed
    if switched.ablate:
        base = run_cached(gpt_view, name, text, Switched(off).options(), None)
        heads = ", ".join(map(head_name, switched.ablate))
        gpt_panels.ablation_shift(P, name, ckpt.tokenizer, base.next_probs, prompt_view.next_probs, heads)
    elif switched.window and not window:
        base = run_cached(gpt_view, name, text, Switched(off).options(), None)
        gpt_panels.window_shift(
            P, name, ckpt.tokenizer, base.next_probs, prompt_view.next_probs, switched.window
        )
    elif window:
        probs = run_cached(step_probs, name, window.text, opts, page.window_ids)[picked - 1]
        title = f"Next {unit} after position {picked - 1}: it drew '{view.tokens[picked]}'"
        gpt_panels.next_character(P, name, ckpt.tokenizer, probs, settings, title, unit, beam)
    else:
        title = f"Next {unit} after the prompt"
        gpt_panels.next_character(P, name, ckpt.tokenizer, view.next_probs, settings, title, unit, beam)

if page.beam is not None:  # ---------------------------- the search that wrote the continuation
    decoding.beam_search_panel(page.beam, ckpt.tokenizer, settings.max_new, unit)

# ---------------------------------------------------------------- 3 one query
st.subheader("3 · One query, step by step")
tokens = view.tokens
query_col, formula_col = st.columns([1, 2.2])
query = gpt_panels.query_picker(P, tokens, query_col, unit)
state.write_state(URL_KEYS, prefix=P)  # the clamped selectors
steps = query_steps(view.records[layer], head, query)
scheme = POSITION_SCHEMES[cfg.positions].display_name  # names the rotation and the bias
gpt_panels.walk_formula(steps, scheme, formula_col, layer=layer, head=head, query=query, token=tokens[query])
stem = export.file_stem("gpt", name, f"L{layer}H{head}", f"query{query}")
gpt_panels.query_and_keys(P, steps, scheme, tokens, tokens[query], stem)
sent = page.maps.trace.attention["self"][layer, head, query] if weighted else None  # the maps' shares
gpt_panels.softmax_steps(P, steps, scheme, tokens, stem, sent)
st.markdown(
    f"Every head of layer {layer} writes such a vector for this {unit}. Side by side they make one "
    f"vector of d_model = {cfg.d_model}, and the output projection W_O mixes what the heads found "
    f"before it is added to the {unit}'s running representation (the residual stream)."
)
w_o, b_o = run_cached(output_projection, name, layer)
ablated_here = tuple(int(a.split(".")[1]) for a in switched.ablate or () if int(a.split(".")[0]) == layer)
merge = head_merge(view.records[layer], query, w_o, b_o, ablated_here)
gpt_panels.heads_merged(P, merge, layer, head, tokens[query], stem)

# ---------------------------------------------------------------- downloads
st.subheader("Take the numbers with you")
st.caption(
    "PNG and SVG: the buttons under each chart (on hover or focus). The files hold every head's weights as "
    "[layer][head][query][key], the same layout as `python -m transformer_core trace --json`."
)
component.download_buttons(
    P,
    export.file_stem("gpt", name, f"L{layer}H{head}", "attention"),
    name,
    view.trace,
    unknown_characters=checked.unknown,
    options=switched.as_json(),
    sample={
        "text": text + continuation,
        "continuation": continuation,
        "settings": beam.as_json() if beam else settings.as_json(),
    },
    selected_head={"layer": layer, "head": head},
    **(window.json_fields() if window else {}),
)
