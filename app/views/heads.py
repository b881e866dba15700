"""/heads: what every head does (detector scores), whether the model needs it (ablation sweep
and gradient proxy), how attention composes (rollout) and what each layer predicts (logit
lens). Reads top to bottom like a short lesson; every number comes from
transformer_core.interp (the same code as `python -m transformer_core heads`)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from attention_lab.charts import component
from attention_lab.charts import head_plots as hp
from attention_lab.explorers.geometry_view import geometry_section
from attention_lab.explorers.head_view import weighted_toggle
from attention_lab.explorers.model_input import checkpoint_note, token_unit
from attention_lab.frame import state, tables
from attention_lab.models.compute import run_cached, view_cached
from attention_lab.models.explorer_compute import (
    dataset_profiles,
    marked_pair,
    probe_sent,
    score_parts,
)
from attention_lab.models.resources import checkpoint_labels, load_model, model_choices
from attention_lab.viewmodel.heads import BEST, HeadsRequest, PatchRequest, heads_page, patch_view
from transformer_core import CheckpointError, ConfigError, InputError
from transformer_core.interp import DESCRIPTIONS, SCORES, heads_json
from transformer_core.interp.decompose import check_decomposable
from transformer_core.interp.report import probe_set_of
from transformer_core.train import checkpoint_recipe

P = "heads_"  # session_state prefix; the URL uses the bare names
URL_KEYS = [
    "checkpoint",
    "probe",
    "score",
    "open",
    "sort",
    "weighted",
    "why_query",
    "why_key",
    "rotated",
    "geo_colour",
    "geo_query",
    "profile",
]
AUTO = -1  # why_query / why_key / geo_query: the page picks (the last query; the key attended most)
ON_PROBE = "on this probe text"

st.title("Heads you can read", anchor=False)
st.caption(
    "Every head of a trained model, scored against the patterns interpretability research has "
    "names for, then switched off one at a time to see which ones the model needs."
)

choices = model_choices("lm") + model_choices("reverse")
if not choices:
    st.warning("No checkpoints found in checkpoints/. Train them with `bash checkpoints/train_all.sh`.")
    state.stop()
default_ckpt = "gpt-induction" if "gpt-induction" in choices else choices[0]
state.init_state(
    {
        "checkpoint": default_ckpt,
        "probe": "",
        "score": "previous_token",
        "open": "",
        "sort": BEST,
        "weighted": False,
        "why_query": AUTO,
        "why_key": AUTO,
        "rotated": False,
        "geo_colour": "position",
        "geo_query": AUTO,
        "profile": "previous_token",
    },
    valid={
        "checkpoint": lambda v: v in choices,
        "score": lambda v: v in SCORES,
        "profile": lambda v: v in SCORES,
        "probe": lambda v: len(v) <= 200,
    },
    prefix=P,
)
state.clamp_state(P + "checkpoint", choices, default_ckpt)


def reopen_key() -> None:
    """Another head or query: section 9 opens again on the key the head attends most."""
    st.session_state[P + "why_key"] = AUTO


def split_cell(query: int, key: int) -> None:
    """A click on section 9's map: split that cell."""
    st.session_state[P + "why_query"], st.session_state[P + "why_key"] = query, key


c1, c2 = st.columns([1, 2])
name = c1.selectbox(
    "Checkpoint",
    choices,
    key=P + "checkpoint",
    persist_state="session",
    format_func=checkpoint_labels(choices),
    help="A shipped model, or one of your runs from the Train page.",
)
probe = c2.text_input(
    "Probe text (optional)",
    key=P + "probe",
    persist_state="session",
    max_chars=200,
    placeholder="default: a few built-in sentences (GPT) or random strings (reversal)",
    help="The text the detectors, the ablation sweep, rollout and the logit lens run on, besides "
    "random segments repeated twice for the induction score. Characters the model lacks are dropped.",
)
try:
    ckpt = load_model(name)
except (CheckpointError, ConfigError, OSError) as e:
    state.write_state(URL_KEYS, prefix=P)
    st.error(f"Could not load {name}: {e}")
    state.stop()
cfg = ckpt.config
is_gpt = cfg.arch == "gpt"
texts = (probe,) if probe.strip() else None
first_probe = probe_set_of(ckpt, texts).texts[0]  # what sections 3, 5 and 6 and the explorer link show
st.caption(checkpoint_note(ckpt) + (" · attention only (no MLP)" if not cfg.mlp else ""))
if not texts and ckpt.training_task == "induction":
    st.caption(
        f"Probe: `{first_probe}`, a random segment twice: the kind of row this model was trained on "
        "(its induction heads need a repeat to show). Type your own above."
    )

# ---------------------------------------------------------------- compute (shared by every user)
try:
    with st.spinner("Scoring every head, ablating each one alone, rollout and logit lens ..."):
        view = view_cached(heads_page, name, HeadsRequest(texts))
except (InputError, ConfigError) as e:
    state.write_state(URL_KEYS, prefix=P, keep=("probe",))  # a probe it cannot read stays out of the URL
    st.error(str(e))
    state.stop()
kinds = list(view.kinds)
scores, importance, induction_probe = view.scores, view.importance, view.induction_probe


# ---------------------------------------------------------------- 1 the table
st.subheader("1 · Every head, scored")
st.markdown(
    "A **template** marks, for each query, the keys a head of one kind should attend to. A head's "
    "score is the share of its attention that lands on the template, `sum(A·D) / sum(A)`, averaged "
    "over the probe texts (the definition of TransformerLens's head detector; rows where the template "
    "marks nothing are left out, so a perfect head scores 1.0 and a uniform causal head 1/(i+1) in "
    "row i). A dash means the score does not apply to that kind of attention."
)
with st.expander("What each score means"):
    st.markdown("\n".join(f"- **{hp.LABELS[s]}**: {DESCRIPTIONS[s]}" for s in SCORES))

numeric = list(view.numeric)
state.clamp_state(P + "sort", numeric, BEST)
sort_by = st.selectbox(
    "Sort by",
    numeric,
    key=P + "sort",
    persist_state="session",
    help="Largest first; a dash (does not apply) last.",
)
table = view.table(sort_by)  # the sorted column beside the head's name; no kind column for a GPT
tables.show(
    table,
    key=P + "table",
    index=False,
    height=420,
    formats=dict.fromkeys(numeric, "{:.3f}") | {"|∂loss/∂gate|": "{:.3g}"},  # as the maps' tips
    bars={BEST: (0.0, 1.0)},
)
st.caption(
    "A dash: the score does not apply to that kind of head. Pick a head below to open it in its explorer."
)
st.download_button(
    "Download every score (JSON, as `python -m transformer_core heads --json`)",
    json.dumps(heads_json(name, scores, importance, view.composition, induction_probe), indent=1),
    file_name=f"heads-{name}.json",
    mime="application/json",
)

# ---------------------------------------------------------------- open a head (deep link)
head_ids = list(table["head"])
state.clamp_state(P + "open", head_ids, head_ids[0])  # a link's unknown head is named
o1, o2 = st.columns([1, 2], vertical_alignment="bottom")
chosen = o1.selectbox(
    "Head to open",
    head_ids,
    key=P + "open",
    persist_state="session",
    on_change=reopen_key,
    format_func=lambda h: "{} layer {} head {}".format(
        hp.KIND_NAMES[h.split(":")[0]], *h.split(":")[1].split(".")
    ),
)
state.write_state(URL_KEYS, prefix=P)
kind_open, lh = chosen.split(":")
layer_open, head_open = (int(x) for x in lh.split("."))
o2.page_link(
    "views/gpt.py" if is_gpt else "views/reversal.py",
    label=f"Open layer {layer_open} head {head_open} in the {'GPT' if is_gpt else 'reversal'} explorer",
    icon=":material/open_in_new:",
    query_params={"checkpoint": name, "layer": str(layer_open), "head": str(head_open), "text": first_probe},
)

# ---------------------------------------------------------------- 2 score maps
st.subheader("2 · Where each kind of head sits")
st.markdown(
    "Each map is one score over layers (rows) × heads (columns). Early layers tend to hold the "
    "simple positional heads (previous token, current token); heads that need another head's "
    "output, like induction heads, can only appear later."
)
component.show(view.charts["scores"], key=P + "maps")
st.caption(
    "Blue maps are shares of attention (0 to 1, one scale: the bar at the right); grey maps are entropy "
    "(nats) and mean distance (positions), each on its own range. Hover a cell for its value."
)

# ---------------------------------------------------------------- 3 small multiples
st.subheader("3 · What the heads look like")
kind_pat = (
    st.radio(
        "Attention",
        kinds,
        horizontal=True,
        format_func=lambda k: hp.KIND_NAMES[k],
        key=P + "kind",
        persist_state="session",
        label_visibility="collapsed",
    )
    if len(kinds) > 1
    else kinds[0]
)
qt, kt = scores.pattern_tokens[kind_pat]
weighted = is_gpt and bool(st.session_state.get(P + "weighted"))  # its toggle is under the grid
patterns = view.charts["patterns"][kind_pat]
if weighted:
    sent = run_cached(probe_sent, name, first_probe)
    patterns = hp.pattern_grid(sent, tuple(qt), tuple(kt), value_name="share sent")
component.show(patterns, key=P + "grid")
st.caption(
    f"Each head's pattern on the first probe text ({''.join(qt) if kind_pat != 'cross' else ''.join(kt)}): "
    "rows are queries, columns keys. A previous-token head is a line just below the diagonal; "
    "an induction head, on a repeated segment, a line shifted one key right of the earlier copy."
    + (" **Value-weighted**: each cell is the key's share of ‖α·v·W_O‖ in its row." if weighted else "")
)
if is_gpt:
    weighted_toggle(P, st)

# ---------------------------------------------------------------- 4 importance
st.subheader("4 · Which heads the model needs")
st.markdown(
    "Left: the **ablation sweep**, exact: each head's output is zeroed alone (a per-call switch, the "
    "weights are untouched) and the loss is measured again on the model's own kind of text, held out "
    "from training. Right: the **gradient "
    "proxy** of Michel et al. (2019): every head's output is multiplied by a gate ξ = 1 and the mean "
    "|∂loss/∂ξ| over the sequences estimates the same thing from one backward pass. "
    f"Loss with every head on: {importance.base_loss:.3f} nats"
    + (
        f", exact match {importance.base_exact_match:.2f}."
        if importance.base_exact_match is not None
        else "."
    )
)
st.caption(f"Measured on {importance.data}.")
component.show(view.charts["importance"], key=P + "importance")
if induction_probe is not None:
    st.markdown(
        "**The same sweep on an induction probe**, apart: random segments repeated are not this model's "
        f"data (loss {induction_probe.base_loss:.2f} nats), so these maps say which heads in-context "
        "copying needs, not which heads the model needs for its text."
    )
    st.caption(f"Measured on {induction_probe.data}.")
    component.show(view.charts["importance_probe"], key=P + "importance_probe")

# ---------------------------------------------------------------- 5 rollout
st.subheader("5 · Attention rollout")
st.markdown(
    "One head's map shows one step. **Rollout** (Abnar & Zuidema, 2020) follows the information "
    "through every layer: average each layer's heads, add the residual connection (½·I + ½·A, rows "
    "renormalised) and multiply the layers together. Row i says how much of position i's final "
    f"state traces back to each input token ({'the GPT' if is_gpt else 'the encoder'}, first probe text)."
)
component.show(view.charts["rollout"], key=P + "rollout", where=st.columns([1, 1])[0])

# ---------------------------------------------------------------- 6 composition
if view.composition is not None:
    st.subheader("6 · How heads compose")
    st.markdown(
        "A later head can read what an earlier head wrote into the residual stream through its "
        "queries (**Q-composition**), its keys (**K-composition**) or its values (**V-composition**). "
        "The score (Elhage et al., 2021) is how much of the earlier head's output circuit W_OV the "
        "later head's W_QK or W_OV picks up: ‖W_later · W_OV‖ / (‖W_later‖ · ‖W_OV‖), from the weights "
        "alone, no input. An induction head finds its key by K-composition with a previous-token head."
    )
    for spec, column in zip(view.charts["composition"], st.columns(3), strict=True):
        component.show(spec, key=spec["file"], where=column)  # heads_composition_q, _k, _v
    st.caption(
        "Rows: the later head that reads; columns: the earlier head that wrote. Blank where the writer is "
        "not in an earlier layer. Same as TransformerLens's `all_composition_scores` on the exported model."
    )

# ---------------------------------------------------------------- 7 logit lens and attribution
if view.lens is not None:
    st.subheader("7 · Logit lens")
    st.markdown(
        "The residual stream after each layer, read as if it were the last: through the final norm "
        "and the unembedding. Each cell is the likeliest next character at that position with its "
        "probability, then the character that truly comes next with its probability (✓ when they are "
        "the same); the last row is the model's real prediction. Watch where in depth the right answer "
        "appears."
    )
    tables.show(view.charts["lens"], key=P + "lens")
    st.caption(
        "Columns are the input positions (index: character); each cell predicts the character after it."
    )
    st.markdown(
        "**Direct logit attribution**: what each head writes straight into the correct next character's "
        "logit (its output through W_O, divided by the final norm's scale, read along that character's "
        "unembedding, averaged over the positions above). Other heads' and MLPs' indirect effects are "
        "not counted: a head can matter (section 4) without writing the answer itself."
    )
    component.show(view.charts["attribution"], key=P + "dla", where=st.columns([1, 2])[0])

# ---------------------------------------------------------------- 8 activation patching
st.subheader("8 · Activation patching")
st.markdown(
    "Two texts of the same length that differ where it matters. Run the **corrupted** one, but take one "
    "head's output (before W_O, every position) from the run on the **clean** one, and see how much of "
    "the clean behaviour comes back: 1 = all of it, 0 = none. A head that restores much carries the "
    "information that separates the two texts."
)
recipe = checkpoint_recipe(cfg.arch, ckpt.training_task)  # each kind of model keeps its own pair
clean_default, corrupt_default = recipe.patch_pair
p1, p2 = st.columns(2)
clean = p1.text_input("Clean text", clean_default, key=P + f"clean_{recipe.name}", max_chars=120)
unit = token_unit(ckpt.tokenizer)  # a BPE model compares tokens: lengths and answers are in tokens
corrupted = p2.text_input(
    "Corrupted text (same length)" if unit == "character" else "Corrupted text (same number of tokens)",
    corrupt_default,
    key=P + f"corrupt_{recipe.name}",
    max_chars=120,
)
with st.expander("Measure a logit difference instead of the clean text's loss"):
    a1, a2 = st.columns(2)
    one = 1 if unit == "character" else 40  # one token, e.g. ␣the
    answer = a1.text_input(f"Answer {unit}", key=P + f"answer_{unit}", max_chars=one) or None
    wrong = a2.text_input(f"Wrong {unit}", key=P + f"wrong_{unit}", max_chars=one) or None
    st.caption(
        "logit[answer] − logit[wrong] at the last position (GPT) or the first output (reversal); "
        "both or neither."
    )
try:
    patched = view_cached(patch_view, name, PatchRequest(clean, corrupted, answer, wrong))
except InputError as e:
    st.error(str(e))
else:
    p = patched.patching
    st.caption(f"{patched.metric}: clean {p.clean:.3f}, corrupted {p.corrupted:.3f}.")
    component.show(patched.maps, key=P + "patching")
    st.caption(
        "Same as TransformerLens's `get_act_patch_attn_head_out_all_pos` on the exported model. "
        f"`python -m transformer_core patch {name} --clean TEXT --corrupt TEXT --json` prints the raw metric."
    )

# ---------------------------------------------------------------- 9 why a head attends
st.subheader("9 · Why this head attends")
st.markdown(
    "A head's score for a query and a key is q·k/√d_k. Both q and k are read from the residual stream, "
    "which is a **sum of parts**: the token embedding, the position code (where the scheme adds one), "
    "what every earlier head and MLP wrote, and the biases. With the layer norm's scale frozen at its "
    "value in this pass, every step is linear, so the score splits exactly into one term per pair "
    "(query part, key part), plus ALiBi's or T5's bias. On `gpt-induction`'s induction head 1.1, the "
    "largest part at its target is the token embedding against a layer-0 head's output: K-composition."
)
explained = None
try:
    check_decomposable(ckpt.model)
    query_axis = scores.pattern_tokens[kind_open][0]
    q_col, k_col = st.columns(2)
    state.resolve_auto(P + "why_query", list(range(len(query_axis))), len(query_axis) - 1, AUTO, ON_PROBE)
    why_query = q_col.selectbox(
        "Query position",
        list(range(len(query_axis))),
        key=P + "why_query",
        on_change=reopen_key,
        format_func=lambda i: f"{i} · {query_axis[i]}",
        help="The position asking, on the first probe text.",
    )
    explained = run_cached(score_parts, name, first_probe, kind_open, layer_open, head_open, why_query)
except (ConfigError, InputError) as e:
    st.info(str(e).removeprefix("explain: ").capitalize(), icon=":material/info:")
if explained is not None:
    parts = explained.parts
    best = int(parts.weights.argmax())
    key_options = list(range(len(explained.keys)))
    state.resolve_auto(P + "why_key", key_options, best, AUTO, ON_PROBE)
    why_key = k_col.selectbox(
        "Key position",
        key_options,
        key=P + "why_key",
        format_func=lambda j: f"{j} · {explained.keys[j]}" + (" (attended most)" if j == best else ""),
        help="The position answering; it opens on the key this head gives the most weight.",
    )
    pattern = scores.patterns[kind_open][layer_open, head_open]  # (Tq, Tk) on the first probe
    if pattern.shape == (len(explained.queries), len(explained.keys)):
        cell_col, note_col = st.columns([1.1, 1], vertical_alignment="center")
        title = f"Layer {layer_open} head {head_open} on the probe: the cell split below"
        cell_map = hp.split_cell_map(pattern, explained.queries, explained.keys, (why_query, why_key), title)
        component.show(cell_map, key=P + "why_cell", on_cell=split_cell, where=cell_col)
        note_col.caption(
            "Click a cell, or move to it with the arrow keys and press Enter, to split its score."
        )
    map_col, bars_col = st.columns([1.1, 1])
    component.show(
        hp.score_part_map(parts, why_key, explained.queries, explained.keys), key=P + "why_map", where=map_col
    )
    component.show(hp.score_part_bars(parts, why_key), key=P + "why_bars", where=bars_col)
    position = f" + position bias {parts.position[why_key]:+.3f}" if parts.position[why_key] else ""
    st.caption(
        f"{hp.KIND_NAMES[kind_open].capitalize()} layer {layer_open} head {head_open}: score "
        f"{parts.scores[why_key]:.3f} (weight {parts.weights[why_key]:.3f}) = the parts above{position}; "
        f"their sum differs from the model's own score by {parts.gap:.1e}. "
        f"`python -m transformer_core explain {name} TEXT --head {kind_open}:{layer_open}.{head_open} "
        f"--query {why_query} --key {why_key} --json` prints the same numbers."
    )

# ---------------------------------------------------------------- 10 query/key geometry
if not (is_gpt and kind_open == "self"):
    st.caption(
        "Sections 10 and 11 (where a head's queries and keys lie, and every head across a dataset) "
        "read a GPT's self-attention heads: open a GPT to see them."
    )
else:
    st.subheader("10 · Where this head's queries and keys lie")
    st.markdown(
        "A head attends where q·k is large, so where its queries and keys lie says what it looks for. "
        "Every query and key of many held-out texts, projected together onto the two directions along "
        "which they vary most (PCA), coloured by position (or by kind of token). A scheme that adds position "
        "codes (sinusoidal, learned) writes position into the vectors, so the colours sort; RoPE adds "
        "position by rotating q and k only at the dot product; ALiBi and T5 add it to the score, so "
        "their vectors hold none of it. The star is one query, linked to the keys it scores highest."
    )
    geometry_section(name, cfg.positions, layer_open, head_open, P)

# ---------------------------------------------------------------- 11 heads across a dataset
if is_gpt and kind_open == "self":
    st.subheader("11 · Every head across a dataset")
    st.markdown(
        "Section 1 scores each head on a few probe texts. Here every head is scored on each of many "
        "held-out windows of the model's own data, so each score is a distribution: its median and "
        "middle half. A head that looks like one thing on a probe often does it only some of the time."
    )
    try:
        profiles = run_cached(dataset_profiles, name)
    except ConfigError as e:
        st.info(str(e), icon=":material/info:")
    else:
        shown_scores = [s for s in SCORES if np.isfinite(profiles.scores[s]).any()]
        state.clamp_state(P + "profile", shown_scores, shown_scores[0], why="across this dataset")
        picked = st.selectbox(
            "Score across the dataset", shown_scores, format_func=lambda s: hp.LABELS[s], key=P + "profile"
        )
        q1, median, q3 = profiles.quartiles(picked)
        probe_scores = scores.scores["self"][picked]
        rows = [
            {"head": f"{l}.{h}", "median": median[l, h], "25%": q1[l, h], "75%": q3[l, h],
             "on the probes (section 1)": probe_scores[l, h]}
            for l in range(cfg.n_layers) for h in range(cfg.n_heads)
        ]  # fmt: skip
        bound = float(np.nanmax(q3)) if np.isfinite(q3).any() else 1.0
        tables.show(
            pd.DataFrame(rows), key=P + "profile_table", index=False, digits=3, bars={"median": (0.0, bound)}
        )
        st.caption(f"Read on {profiles.data}.")
        top = profiles.top[layer_open, head_open]
        pairs = [
            {"weight": w, "window": int(win), "query": int(q), "key": int(k),
             "in context": marked_pair(profiles.windows[int(win)], int(q), int(k))}
            for win, q, k, w in top
        ]  # fmt: skip
        st.markdown(
            f"**Layer {layer_open} head {head_open}'s {len(pairs)} largest weights** across the windows"
        )
        tables.show(pd.DataFrame(pairs), key=P + "profile_pairs", index=False, digits=3)
        st.caption(
            "In context: the key is written [k], the query {q}. A window's first query is left out: "
            "it can only see itself."
        )
