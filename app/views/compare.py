"""Side by side: one input through two models, or one model under two switch settings.

`/compare?a=reverse-rope&b=reverse-none&text=attention` (b defaults to a, so
`/compare?a=gpt-rope&b_noscale=true` compares one checkpoint with scaling on and off).
"""

import functools
import json

import numpy as np
import pandas as pd
import streamlit as st

from attention_lab.charts import component, export
from attention_lab.charts import specs as charts
from attention_lab.explorers.compare_geometry import geometry_side_by_side
from attention_lab.explorers.head_view import (
    head_selectors,
    names_no_head,
    open_on_lesson,
    pick_head,
    weighted_toggle,
)
from attention_lab.explorers.model_input import (
    check_input,
    checkpoint_note,
    outside_training,
    show_input_notes,
    token_unit,
    trained_help,
)
from attention_lab.explorers.reversal_panels import baselines_beside
from attention_lab.frame import state, tables
from attention_lab.frame.markdown_safe import md_code
from attention_lab.frame.state import visible
from attention_lab.models.compute import run_cached, view_cached
from attention_lab.models.explorer_compute import lesson_head, top_tokens
from attention_lab.models.inference_switches import (
    Switch,
    Switched,
    switch_toggles,
    window_picker,
    window_value,
)
from attention_lab.models.resources import checkpoint_label, checkpoint_labels, load_model, model_choices
from attention_lab.viewmodel.attention import kind_label, titled
from attention_lab.viewmodel.compare import SCORED, CompareRequest, compare_side
from attention_lab.viewmodel.reversal import ReversalRequest, reversal_page
from transformer_core import CheckpointError, ConfigError, InferenceOptions, InputError
from transformer_core.interp import JSON_DECIMALS, GPTTrace, Seq2SeqTrace
from transformer_core.io import Checkpoint

P = "cmp_"  # session_state prefix; the URL uses the bare names
MAX_CHARS = 30
SIDES = ("a", "b")
SWITCHES = (  # each side's switches, in the URL as a_nopos, b_noscale, ...
    Switch("nopos", "No positions", "Same weights, no position signal (no added codes, no RoPE, no ALiBi)."),
    Switch(
        "nocausal", "No causal mask", "GPT: every character sees the ones after it. Reversal: the decoder's."
    ),
    Switch("noscale", "No scaling", "No division by √d_k: the softmax of q·k itself, not of q·k / √d_k."),
)
URL_KEYS = ["a", "b", "text", "kind", "layer", "head", "weighted"] + [
    f"{s}_{w}" for s in SIDES for w in (*(w.name for w in SWITCHES), "window")
]
KINDS = {"gpt": ["self"], "seq2seq": ["cross", "encoder_self", "decoder_self"]}
st.title("Side by side", anchor=False)
st.caption(
    "The same input through two models, or through one model with different switches: both attention "
    "grids on one colour scale, then one head of each and their difference."
)

choices = model_choices("reverse", baselines=True)  # a baseline beside a Transformer: section 1 alone
hidden = st.empty()  # run ids in the URL were reported above; do not report them twice
with hidden.container():
    choices += model_choices("lm")
hidden.empty()
if not choices:
    st.warning("No checkpoints found in checkpoints/. Train them with `bash checkpoints/train_all.sh`.")
    state.stop()

default_a = "reverse-rope" if "reverse-rope" in choices else choices[0]
unnamed = names_no_head(P)  # then the page opens on A's lesson head, as /reversal and /gpt do
state.init_state({"a": default_a}, valid={"a": lambda v: v in choices}, prefix=P)
if "a" in st.query_params or "reverse-none" not in choices:
    default_b = st.session_state[P + "a"]  # b defaults to a: one model, two settings
else:
    default_b = "reverse-none"  # the bare address opens the classic pair
state.init_state(
    {
        "b": default_b,
        "text": "attention",
        "kind": "",
        "layer": 0,
        "head": 0,
        "weighted": False,
        **{f"{s}_{w.name}": False for s in SIDES for w in SWITCHES},
        **{f"{s}_window": 0 for s in SIDES},
    },
    valid={
        "b": lambda v: v in choices,
        "layer": lambda v: v >= 0,
        "head": lambda v: v >= 0,
        **{f"{s}_window": lambda v: 0 <= v <= 4096 for s in SIDES},
    },
    prefix=P,
)
state.clamp_state(P + "a", choices, default_a)
state.clamp_state(P + "b", choices, default_b)

# ---------------------------------------------------------------- the two sides and the input
c_a, c_b, c_text = st.columns([1, 1, 1.3])
names = {
    "a": c_a.selectbox(
        "Model A", choices, key=P + "a", persist_state="session", format_func=checkpoint_labels(choices)
    ),
    "b": c_b.selectbox(
        "Model B",
        choices,
        key=P + "b",
        persist_state="session",
        format_func=checkpoint_labels(choices),
        help="Pick the same model to compare switches.",
    ),
}


def load(side: str) -> Checkpoint | str:
    """The side's model, or why it cannot be loaded (said once the widgets are drawn)."""
    try:
        return load_model(names[side])
    except (CheckpointError, ConfigError, OSError) as e:
        return f"Could not load model {side.upper()} ({names[side]}): {e}"


loaded = {side: load(side) for side in SIDES}
trained = {side: trained_help(c) for side, c in loaded.items() if not isinstance(c, str)}
helps = list(dict.fromkeys(h for h in trained.values() if h))  # both alike: said once
raw = c_text.text_input(
    f"Input (at most {MAX_CHARS} characters for reversal)",
    key=P + "text",
    persist_state="session",
    help=helps[0]
    if len(helps) == 1
    else " ".join(f"{k.upper()}: {h}" for k, h in trained.items() if h) or None,
)
options: dict[str, InferenceOptions] = {}
for side, col in zip(SIDES, (c_a, c_b), strict=True):  # each side's switches under its model
    longest = 4096 if isinstance(loaded[side], str) else loaded[side].config.max_len
    toggles = switch_toggles(col, f"{P}{side}_", SWITCHES)
    window = window_value(f"{P}{side}_", longest)
    with col.popover(f"Sliding window: {window or 'off'}"):  # a button's height: the grids stay on screen
        window_picker(st, f"{P}{side}_", longest, f"Sliding window W, {side.upper()}")
    options[side] = Switched(toggles, window=window).options()
state.write_state(URL_KEYS, prefix=P, keep=("text",))  # before anything can stop the page
for problem in (c for c in loaded.values() if isinstance(c, str)):
    st.error(problem, icon=":material/error:")
    state.stop()
ckpts: dict[str, Checkpoint] = {side: c for side, c in loaded.items() if not isinstance(c, str)}
cfg_a, cfg_b = ckpts["a"].config, ckpts["b"].config
shape_a = (cfg_a.arch, cfg_a.n_layers, cfg_a.n_heads)
shape_b = (cfg_b.arch, cfg_b.n_layers, cfg_b.n_heads)
recurrent = any(c.config.model != "transformer" for c in ckpts.values())  # chapter 004's baselines
if shape_a != shape_b and not (recurrent and cfg_a.arch == cfg_b.arch):
    st.error(
        "The two sides need the same architecture to be compared head by head: "
        f"A is {cfg_a.arch} with {cfg_a.n_layers} layers × {cfg_a.n_heads} heads, "
        f"B is {cfg_b.arch} with {cfg_b.n_layers} layers × {cfg_b.n_heads} heads. "
        "Pick two GPT checkpoints or two reversal checkpoints.",
        icon=":material/compare_arrows:",
    )
    state.stop()
arch, n_layers, n_heads = shape_a
for side in SIDES:
    st.caption(f"**{side.upper()}** · {checkpoint_label(names[side])} · " + checkpoint_note(ckpts[side]))

reversal = arch == "seq2seq"
limit = min((min(MAX_CHARS, c.config.max_len - 2) if reversal else c.config.max_len) for c in ckpts.values())
checked = {side: check_input(raw, ckpts[side].tokenizer, limit, lowercase=reversal) for side in SIDES}
if checked["a"].problem:
    (st.warning if not raw else st.error)(checked["a"].problem, icon=":material/error:")
    state.stop()
state.write_state(URL_KEYS, prefix=P)  # the input was accepted: now the link may carry it
show_input_notes(checked["a"])
if checked["b"].unknown != checked["a"].unknown:
    show_input_notes(checked["b"], what="model B")
text = checked["a"].text
if recurrent:
    try:
        request = {side: ReversalRequest(text, InferenceOptions() if ckpts[side].config.model != "transformer"
                                         else options[side]) for side in SIDES}  # fmt: skip
        beside = {side: view_cached(reversal_page, names[side], request[side]) for side in SIDES}
    except (InputError, ConfigError) as e:
        st.error(str(e), icon=":material/error:")
        state.stop()
    baselines_beside(P, names, ckpts, beside)
    state.stop()


cell_px = int(min(110, max(55, 280 / n_heads)))
weighted = bool(st.session_state.get(P + "weighted"))  # its toggle is drawn under the grids it changes
try:
    views = {
        side: view_cached(compare_side, names[side], CompareRequest(text, options[side], weighted))
        for side in SIDES
    }
except (InputError, ConfigError) as e:
    st.error(str(e), icon=":material/error:")
    state.stop()
traces = {side: views[side].trace for side in SIDES}


def answer(side: str) -> str:
    """What one side answers: the reversal's output and verdict (and the lengths the model was
    trained on, where the input lies outside them), or the likeliest next characters (tokens,
    for a BPE model)."""
    tr = traces[side]
    if reversal:
        expected = text[::-1]
        verdict = "the input reversed" if tr.output == expected else f"not the reverse ({expected})"
        trained = outside_training(ckpts[side], len(text))
        return (
            f"**{side.upper()}** writes {md_code(visible(tr.output)) if tr.output else '(nothing)'}"
            f" — {verdict}" + (f". {trained}" if trained else "")
        )
    top = top_tokens(tr.next_token_probs, ckpts[side].tokenizer, k=5)
    unit = token_unit(ckpts[side].tokenizer)
    return f"**{side.upper()}**'s likeliest next {unit}s: " + " · ".join(
        f"{md_code(label)} {p:.2f}" for _, label, p in top
    )


# ---------------------------------------------------------------- 2 every head, one colour scale
st.subheader("1 · What each side answers, and every head")
kinds = KINDS[arch]
state.clamp_state(P + "kind", kinds, kinds[0])
kind = c_text.selectbox("Attention", kinds, key=P + "kind", persist_state="session", format_func=kind_label)
l_col, h_col = c_text.columns(2)  # under the input, beside the switches
lesson = views["a"].best if reversal else run_cached(lesson_head, names["a"])  # as /reversal, /gpt open
open_on_lesson(P, (names["a"], text), lesson, unnamed)
layer, head = head_selectors(P, n_layers, n_heads, [l_col, h_col])
state.write_state(URL_KEYS, prefix=P)  # kind, layer and head settled


def common_difference(
    a: GPTTrace | Seq2SeqTrace, b: GPTTrace | Seq2SeqTrace, kind: str
) -> tuple[np.ndarray, list[str], list[str]]:
    """B − A over the shape both sides share, (L, H, Tq, Tk), with its query and key labels
    (a position whose tokens differ is labelled 'a|b')."""
    wa, wb = a.attention[kind], b.attention[kind]
    tq, tk = min(wa.shape[2], wb.shape[2]), min(wa.shape[3], wb.shape[3])
    diff = wb[:, :, :tq, :tk].astype(np.float64) - wa[:, :, :tq, :tk]
    (qa, ka), (qb, kb) = a.axes(kind), b.axes(kind)
    queries = [x if x == y else f"{x}|{y}" for x, y in zip(qa[:tq], qb[:tq], strict=True)]
    keys = [x if x == y else f"{x}|{y}" for x, y in zip(ka[:tk], kb[:tk], strict=True)]
    return diff, queries, keys


diff, queries, keys = common_difference(traces["a"], traces["b"], kind)
per_head = np.abs(diff).mean(axis=(2, 3))  # (L, H): mean |B − A|
scored_kind, score_name = SCORED[arch]
for side, col in zip(SIDES, st.columns(2, gap="medium"), strict=True):
    scores = views[side].scores if kind == scored_kind else None
    titles = [
        [
            f"L{l} H{h}"
            + (f" · {scores[l, h]:.2f}" if scores is not None else "")
            + (f" · Δ{per_head[l, h]:.2f}" if side == "b" else "")
            for h in range(n_heads)
        ]
        for l in range(n_layers)
    ]
    col.markdown(answer(side))
    component.show(
        titled(
            views[side].maps[kind].grid_with(layer, head, ("compare", names[side], side), cell_px), titles
        ),
        key=f"{P}{side}_grid",
        on_head=functools.partial(pick_head, P),
        where=col,
    )
st.caption(
    (
        "Both grids use one colour scale, each key's share of what its query receives, ‖α·v·W_O‖ over "
        "its row's sum, 0 (white) to 1 (dark blue); the scores stay those of the weights. "
        if weighted
        else "Both grids use one colour scale, weight 0 (white) to 1 (dark blue). "
    )
    + (
        f"Each small map's title gives that head's {score_name} score on this input (1.00: all weight "
        f"on the {'mirrored letter' if reversal else 'token before'}); "
        if kind == scored_kind
        else ""
    )
    + "titles on B's grid also give Δ = mean |B − A| of that head. The page opens on A's best "
    f"{score_name} head, L{lesson[0]} H{lesson[1]}."
    + (
        " Both sides give the same "
        + ("output." if reversal else f"most likely next {token_unit(ckpts['a'].tokenizer)}.")
        if traces["a"].output == traces["b"].output
        else ""
    )
)
weighted_toggle(P, st)
shapes = {side: traces[side].attention[kind].shape[2:] for side in SIDES}
if shapes["a"] != shapes["b"]:
    st.info(
        f"The maps differ in size (A {shapes['a'][0]}×{shapes['a'][1]}, B {shapes['b'][0]}×{shapes['b'][1]}: "
        "the two outputs differ in length). The difference covers only the common "
        f"{diff.shape[2]}×{diff.shape[3]} part, from the top left.",
        icon=":material/crop:",
    )
elif reversal and kind != "encoder_self" and traces["a"].output != traces["b"].output:
    st.info(
        "The outputs differ, so the decoder rows read different letters (labelled 'A|B'): "
        "their difference mixes the two inputs of the decoder with the two models.",
        icon=":material/info:",
    )


# ---------------------------------------------------------------- 3 one head: A, B and B − A
st.subheader(f"2 · Layer {layer}, head {head}: A, B and the difference")
bound = max(float(np.abs(diff[layer, head]).max(initial=0.0)), 1e-3)
col_a, col_b, col_d = st.columns(3, gap="small")
for side, col in (("a", col_a), ("b", col_b)):
    component.show(
        views[side]
        .maps[kind]
        .head(
            layer,
            head,
            title=f"{side.upper()}: {checkpoint_label(names[side])}",
            height=400,
            stem=("compare", names[side], side),
        ),
        key=f"{P}{side}_head",
        where=col,
    )
component.show(
    charts.head_spec(
        diff[layer, head],
        queries,
        keys,
        f"B − A · mean |B − A| = {per_head[layer, head]:.3f}",
        zmin=-bound,
        zmax=bound,
        colorscale="RdBu",
        value_name="B − A",
        height=400,
        file=export.file_stem(
            "compare", f"{names['a']}-vs-{names['b']}", kind, f"L{layer}H{head}", "difference"
        ),
    ),
    key=f"{P}diff_head",
    where=col_d,
)
st.caption("Blue: B gives the cell more weight than A; red: less; white: the same.")

# ---------------------------------------------------------------- 4 one number per head
st.subheader("3 · How much each head changed")
table = pd.DataFrame(
    per_head, index=[f"layer {l}" for l in range(n_layers)], columns=[f"head {h}" for h in range(n_heads)]
)
tables.show(table, key=P + "per_head", digits=3)
st.caption(
    f"Mean |B − A| over the {diff.shape[2]}×{diff.shape[3]} cells both sides share; 0 = identical "
    f"attention. Largest: {per_head.max():.3f} (layer {int(per_head.argmax() // n_heads)}, "
    f"head {int(per_head.argmax() % n_heads)})."
)


# ---------------------------------------------------------------- 5 where position lives
if arch == "gpt":
    st.subheader(f"4 · Where each side keeps position: layer {layer} head {head}'s queries and keys")
    st.markdown(
        "Every query and key of held-out texts, projected onto the two directions they vary most along, "
        "coloured from early to late positions: where the colours sort, the vectors carry position."
    )
    geometry_side_by_side(names, ckpts, layer, head, P)

# ---------------------------------------------------------------- downloads
SWITCH_FIELDS = ("causal", "padding_mask", "positions", "scale_scores")


def comparison_json() -> str:
    """Both traces (as `trace --json` prints them, with their switches) and B − A."""
    sides = {
        side: {
            **traces[side].to_json(names[side]),
            "options": {
                f: getattr(options[side], f) for f in ("causal", "padding_mask", "positions", "scale_scores")
            },
        }
        for side in SIDES
    }
    difference = {
        "kind": kind,
        "queries": queries,
        "keys": keys,
        "b_minus_a": np.round(diff, JSON_DECIMALS).tolist(),  # [layer][head][query][key]
        "mean_abs_per_head": np.round(per_head, JSON_DECIMALS).tolist(),  # [layer][head]
    }
    shown = {"value_weighted": weighted}  # the attention above: each key's share of ||alpha v W_O||
    return json.dumps({**sides, "difference": difference, **shown}, ensure_ascii=False)


st.subheader("Take the numbers with you")
stem = export.file_stem("compare", names["a"], "vs", names["b"], kind)
downloads = st.container(horizontal=True)
downloads.download_button(
    "A, B and B − A as JSON",
    data=comparison_json,
    file_name=f"{stem}.json",
    mime="application/json",
    on_click="ignore",
    icon=":material/download:",
    key=P + "json",
)
downloads.download_button(
    "Mean |B − A| per head as CSV",
    data=table.to_csv(index_label="layer"),
    file_name=f"{stem}_per_head.csv",
    mime="text/csv",
    on_click="ignore",
    icon=":material/download:",
    key=P + "csv",
)
