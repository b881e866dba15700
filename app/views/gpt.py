"""GPT explorer: sample from a character-level GPT and open up every self-attention head."""

import html
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st
from lab import charts, export, state, tables
from lab import explorer as ex
from lab.compute import run_cached
from lab.resources import load_model, model_choices

from transformer_core import POSITION_SCHEMES, CheckpointError, ConfigError, InferenceOptions, InputError

P = "gpt_"  # session_state prefix; the URL uses the bare names
URL_KEYS = [
    "checkpoint",
    "text",
    "layer",
    "head",
    "query",
    "nopos",
    "nocausal",
    "ablate",
    "max_new",
    "temperature",
    "top_k",
    "top_p",
    "seed",
]
DEFAULT_PROMPT = "The with statement is used to"


def _frac(num: str, den: str) -> str:
    return (
        '<span style="display:inline-flex;flex-direction:column;vertical-align:middle;'
        f'text-align:center;margin:0 .2em"><span>{num}</span>'
        f'<span style="border-top:1px solid;padding-top:.1em">{den}</span></span>'
    )


def walk_formula(has_bias: bool) -> str:
    """The walk's maths as HTML: s_j = q.k_j / sqrt(d_k) (+ b_j), w_j = softmax over the
    allowed keys, out = sum_j w_j v_j (st.latex would load KaTeX, 0.3 MB, before any chart)."""
    bias = " + <i>b<sub>j</sub></i>" if has_bias else ""
    s = _frac("<i>q</i> · <i>k<sub>j</sub></i>", "√<i>d<sub>k</sub></i>") + bias
    w = _frac(
        "<i>e<sup>s<sub>j</sub></sup></i>", "Σ<sub><i>i</i> allowed</sub> <i>e<sup>s<sub>i</sub></sup></i>"
    )
    return (
        '<div style="text-align:center;font-size:1.15rem;font-family:serif;margin:.3rem 0">'
        f"<i>s<sub>j</sub></i> = {s},&emsp;<i>w<sub>j</sub></i> = {w},&emsp;"
        "out = Σ<sub><i>j</i></sub> <i>w<sub>j</sub></i> <i>v<sub>j</sub></i></div>"
    )


st.title("GPT explorer")
st.caption(
    "A character-level GPT trained on Python's documentation. Type a prompt, see where every head "
    "looks, then what the model writes next."
)

choices = model_choices("lm")
if not choices:
    st.warning(
        "No GPT checkpoints found in checkpoints/. Train them with "
        "`bash checkpoints/train_all.sh`, or train one on the Train page."
    )
    st.stop()

default_ckpt = "gpt-sinusoidal" if "gpt-sinusoidal" in choices else choices[0]
state.init_state(
    {
        "checkpoint": default_ckpt,
        "text": DEFAULT_PROMPT,
        "layer": 0,
        "head": 0,
        "query": -1,
        "nopos": False,
        "nocausal": False,
        "ablate": [],
        "max_new": 80,
        "temperature": 0.8,
        "top_k": 0,
        "top_p": 1.0,
        "seed": 0,
    },
    valid={
        "checkpoint": lambda v: v in choices,
        "layer": lambda v: v >= 0,
        "head": lambda v: v >= 0,
        "ablate": lambda v: all(re.fullmatch(r"\d+\.\d+", a) for a in v),
        "max_new": lambda v: 1 <= v <= 200,
        "temperature": lambda v: 0.0 <= v <= 2.0,
        "top_k": lambda v: v >= 0,
        "top_p": lambda v: 0.05 <= v <= 1.0,
        "seed": lambda v: 0 <= v < 2**31,
    },
    prefix=P,
)
ex.clamp_state(P + "checkpoint", choices, default_ckpt)


SAMPLE_RGB = (37, 99, 235)  # sampled characters: this blue, more opaque the likelier
SAMPLE_RGB_CSS = ",".join(map(str, SAMPLE_RGB))


def token_html(prompt: str, unknown: list[str], samples: list[ex.Sample]) -> str:
    """The prompt in grey (characters the model lacks shown as <unk>), then each sampled
    character shaded by its probability; hover shows the probability and the alternatives."""
    shown_prompt = "".join("<unk>" if c in unknown else c for c in prompt)
    parts = [f'<span style="color:#6b7280">{html.escape(shown_prompt)}</span>']
    for s in samples:
        alpha = 0.15 + 0.75 * s.prob
        alts = ", ".join(f"{lab} {p:.2f}" for lab, p in s.top)
        title = html.escape(f"p = {s.prob:.3f} | most likely: {alts}", quote=True)
        shown = html.escape(s.text if s.text not in ("", "<unk>") else s.label)
        parts.append(
            f'<span title="{title}" style="background:rgba({SAMPLE_RGB_CSS},{alpha:.2f});'
            f'color:{ex.text_colour(SAMPLE_RGB, alpha)};border-radius:3px">{shown}</span>'
        )
    return (
        '<div style="font-family:monospace;font-size:1.05rem;white-space:pre-wrap;line-height:1.7;'
        'border:1px solid #e5e7eb;border-radius:6px;padding:8px 10px">' + "".join(parts) + "</div>"
    )


# ---------------------------------------------------------------- prompt, model, switches
top_left, top_mid, top_right = st.columns([1, 1.5, 1.25])
name = top_left.selectbox(
    "Checkpoint",
    choices,
    key=P + "checkpoint",
    help="The same model trained once per positional scheme; then your own runs.",
)
raw = top_mid.text_area(
    "Prompt", key=P + "text", height=112, help="Any text; characters the model never saw become <unk>."
)
nopos = top_right.toggle(
    "Drop positional information",
    key=P + "nopos",
    help="Same weights, no position signal: no added codes, no RoPE rotation, no ALiBi bias.",
)
nocausal = top_right.toggle(
    "Causal mask off",
    key=P + "nocausal",
    help="Let every character see the ones after it (red outlines in the head view).",
)
try:
    ckpt = load_model(name)
except (CheckpointError, ConfigError, OSError) as e:
    state.write_state(URL_KEYS, prefix=P, keep=("text",))
    st.error(f"Could not load {name}: {e}")
    st.stop()
cfg = ckpt.config
heads = [f"{l}.{h}" for l in range(cfg.n_layers) for h in range(cfg.n_heads)]
ablated = st.session_state.get(P + "ablate", [])
if any(a not in heads for a in ablated):  # only then: assigning sends the value over the user's
    st.session_state[P + "ablate"] = [a for a in ablated if a in heads]

ablate = top_left.multiselect(
    "Ablate heads",
    heads,
    key=P + "ablate",
    placeholder="none",
    format_func=lambda a: "L{} H{}".format(*a.split(".")),
    help="Zero these heads' outputs; the weights are untouched.",
)
state.write_state(URL_KEYS, prefix=P, keep=("text",))  # before anything can stop the page
st.caption(ex.checkpoint_note(ckpt) + " · the switches apply to sampling and to the attention below")

checked = ex.check_input(raw, ckpt.tokenizer, cfg.max_len)
if checked.problem:
    (st.warning if not raw else st.error)(checked.problem, icon=":material/error:")
    state.stopped_early()
    st.stop()
state.write_state(URL_KEYS, prefix=P)  # the prompt was accepted: now the link may carry it
ex.show_input_notes(checked)
text = checked.text
ablation = frozenset(("self", *map(int, a.split("."))) for a in ablate)
opts = InferenceOptions(causal=not nocausal, positions=not nopos, ablate=ablation)

# ---------------------------------------------------------------- 1 every head
st.subheader("1 · Every head at once")
try:
    view = run_cached(ex.gpt_view, name, text, opts)
except (InputError, ConfigError) as e:
    st.error(str(e))
    st.stop()
tokens = view.tokens
grid_col, head_col = ex.grid_columns()
layer, head = ex.head_selectors(P, cfg.n_layers, cfg.n_heads, head_col.columns(2))
titles = [
    [f"L{l} H{h}" + (" (ablated)" if f"{l}.{h}" in ablate else "") for h in range(cfg.n_heads)]
    for l in range(cfg.n_layers)
]
ex.grid_and_head(
    name,
    text,
    opts,
    "self",
    prefix=P,
    chart="self",
    layer=layer,
    head=head,
    head_title=f"Layer {layer} head {head}",
    cell_titles=titles,
    mark_future=nocausal,
    columns=(grid_col, head_col),
)
st.caption(
    "One small map per layer (row) and head (column), all on one colour scale: rows are the "
    "characters asking (queries), columns the characters answering (keys). Click a map, or use "
    "the selectors, to draw that head large with exact weights on hover."
    + (
        " Causal mask **off**: red outlines mark characters *after* the query that now get more "
        "than 1% of its attention: the model peeks at the future it never saw in training."
        if nocausal
        else ""
    )
)

# ---------------------------------------------------------------- 2 sampling
st.subheader("2 · What the model writes next")
g1, g2, g3, g4, g5 = st.columns(5)
max_new = g1.slider("New characters", 1, 200, key=P + "max_new")
temperature = g2.slider(
    "Temperature",
    0.0,
    2.0,
    step=0.05,
    key=P + "temperature",
    help="Divides the logits: low = safe and repetitive, high = adventurous. 0 = greedy.",
)
ex.clamp_state(P + "top_k", list(range(len(ckpt.tokenizer) + 1)), 0)
top_k = g3.number_input(
    "Top-k (0 = off)",
    0,
    len(ckpt.tokenizer),
    key=P + "top_k",
    help="Sample only among the k most likely characters.",
)
top_p = g4.slider(
    "Top-p (1 = off)",
    0.05,
    1.0,
    step=0.05,
    key=P + "top_p",
    help="Sample only among the most likely characters that together reach this probability.",
)
seed = g5.number_input("Seed", 0, 2**31 - 1, key=P + "seed", help="Same seed, same sample.")
try:
    samples = run_cached(
        ex.sample, name, text, int(max_new), float(temperature), int(top_k), float(top_p), int(seed), opts
    )
except (InputError, ConfigError) as e:
    st.error(str(e))
    st.stop()
text_col, next_col = st.columns([1.5, 1], gap="medium")
with text_col:
    st.html(token_html(text, checked.unknown, samples))
    st.caption(
        "Darker = the model was surer of the character it drew. Hover a character for its "
        "probability and the alternatives it was weighing."
    )
    with st.expander("Every sampled character with its top alternatives"):
        tables.show(
            pd.DataFrame(
                {
                    "step": range(1, len(samples) + 1),
                    "sampled": [s.label for s in samples],
                    "probability": [s.prob for s in samples],
                    "alternatives": ["  ".join(f"{lab} {p:.2f}" for lab, p in s.top) for s in samples],
                }
            ),
            key=P + "samples",
            index=False,
            height=260,
            formats={"probability": "{:.3f}"},
            bars={"probability": (0.0, 1.0)},
        )

# next-character distribution after the prompt, and what an ablation changed
probs = view.next_probs
with next_col:
    if ablation:
        base = run_cached(ex.gpt_view, name, text, replace(opts, ablate=frozenset()))
        tv, kl = ex.distribution_shift(base.next_probs, probs)
        ids = list(
            dict.fromkeys(
                [i for i, _, _ in ex.top_tokens(base.next_probs, ckpt.tokenizer, 6)]
                + [i for i, _, _ in ex.top_tokens(probs, ckpt.tokenizer, 6)]
            )
        )
        charts.show(
            charts.bars_spec(
                ckpt.tokenizer.token_labels(ids),
                {"all heads": base.next_probs[ids], "with ablation": probs[ids]},
                "Next character: before and after ablation",
                height=250,
                file=export.file_stem("gpt", name, "next_ablated"),
            ),
            key=P + "next",
        )
        m1, m2 = st.columns(2)
        m1.metric(
            "Total variation",
            f"{tv:.3f}",
            help="Half the summed absolute change in probability: 0 = same, 1 = disjoint.",
        )
        m2.metric(
            "KL(before ‖ after)",
            f"{kl:.3f}",
            help="In nats: the extra surprise of predicting with the ablated model.",
        )
        names = ", ".join("L{} H{}".format(*a.split(".")) for a in ablate)
        st.caption(
            f"Ablating {names} moves this much probability. Try heads one at a time to find "
            "the ones the prediction depends on."
        )
    else:  # the temperature moment: what the model says, and what the dice are thrown on
        sampled = ex.sampled_distribution(probs, float(temperature), int(top_k), float(top_p))
        ids = list(
            dict.fromkeys(
                [i for i, _, _ in ex.top_tokens(probs, ckpt.tokenizer, 10)]
                + [i for i, _, _ in ex.top_tokens(sampled, ckpt.tokenizer, 10) if sampled[i] > 0]
            )
        )[:14]
        settings = [f"temperature {temperature:g}" if temperature > 0 else "greedy (temperature 0)"]
        settings += [f"top-k {top_k}"] * bool(top_k) + [f"top-p {top_p:g}"] * (top_p < 1)
        charts.show(
            charts.bars_spec(
                ckpt.tokenizer.token_labels(ids),
                {"model (softmax of the logits)": probs[ids], "sampled from": sampled[ids]},
                "Next character after the prompt",
                height=250,
                file=export.file_stem("gpt", name, "next"),
            ),
            key=P + "next",
        )
        kept = int((sampled > 0).sum())
        st.caption(
            f"Sampled from: {', '.join(settings)}: {kept} of {len(sampled)} characters can be drawn; "
            "the most likely one has "
            f"{sampled.max():.0%} (the model gives it {probs[int(sampled.argmax())]:.0%}). Lower temperature "
            "sharpens, higher flattens; top-k and top-p cut the tail."
        )

# ---------------------------------------------------------------- 3 one query
st.subheader("3 · One query, step by step")
T = len(tokens)
positions = list(range(T))
if st.session_state.get(P + "query") not in positions:
    st.session_state[P + "query"] = T - 1
qcol, fcol = st.columns([1, 2.2])
query = qcol.selectbox(
    "Query character", positions, key=P + "query", format_func=lambda i: f"position {i}: {tokens[i]}"
)
state.write_state(URL_KEYS, prefix=P)  # the clamped selectors
steps = ex.query_steps(view.records[layer], head, query)
scheme = POSITION_SCHEMES[cfg.positions].display_name  # names the rotation and the bias
d_k = steps.q.shape[0]
has_bias = steps.bias is not None
with fcol:
    st.html(walk_formula(has_bias))
    st.caption(
        f"Layer {layer}, head {head}, query {ex.md_code(tokens[query])} at position {query}; "
        f"d_k = {d_k}, so the scores are multiplied by 1/√{d_k} = {steps.scale:.4f}."
        + (f" {scheme} adds the distance penalty b_j." if has_bias else "")
    )

vecs = (
    {f"q (before {scheme})": steps.q_raw, f"q (after {scheme})": steps.q} if steps.rotated else {"q": steps.q}
)
v1, v2 = st.columns(2)
stem = export.file_stem("gpt", name, f"L{layer}H{head}", f"query{query}")
charts.show(
    charts.bars_spec(
        list(range(d_k)),
        vecs,
        f"Query vector of '{tokens[query]}'",
        height=260,
        x_title="dimension",
        y_title="value",
        file=stem + "_q",
    ),
    key=P + "qvec",
    where=v1,
)
if steps.rotated:
    after, before = v2.tabs([f"keys after {scheme}", f"keys before {scheme}"])
    charts.show(
        charts.matrix_spec(
            steps.k, tokens, "Key vectors, rotated: what the scores use", value_name="k", file=stem + "_keys"
        ),
        key=P + "kmat",
        where=after,
    )
    charts.show(
        charts.matrix_spec(
            steps.k_raw, tokens, "Key vectors before the rotation", value_name="k", file=stem + "_keys_raw"
        ),
        key=P + "kraw",
        where=before,
    )
else:
    charts.show(
        charts.matrix_spec(
            steps.k, tokens, "Key vectors, one row per key", value_name="k", file=stem + "_keys"
        ),
        key=P + "kmat",
        where=v2,
    )
if steps.rotated:
    st.caption(
        "RoPE turns each pair of dimensions of q and k by an angle that grows with the position, "
        "so q·k depends on how far apart the two characters are. Hover the bars to compare."
    )

shifted = np.where(steps.allowed, np.exp(steps.scores - steps.scores[steps.allowed].max()), 0.0)
walk = [  # the single-query walk, one column per step: (column, values, what happens)
    ("q·k", steps.dot, "the query's dot product with every key"),
    (f"× 1/√{d_k}", steps.scaled, f"scaled by 1/√d_k = 1/√{d_k}, so the scores keep a unit spread"),
]
if has_bias:
    walk.append((f"+ {scheme} bias", steps.bias, f"{scheme} adds a bias that grows with the distance"))
walk += [
    ("score s", steps.scores, "the score of each key"),
    (
        "masked s",
        np.where(steps.allowed, steps.scores, -np.inf),
        "the causal mask sets the scores of later keys to −∞, so e^(−∞) = 0",
    ),
    (
        "e^(s − max)",
        shifted,
        f"exponentiated (minus the largest score, for stability); sum {shifted.sum():.4f}",
    ),
    ("weight w", steps.weights, "softmax: each key's share of the sum; the weights add up to 1"),
]
WALK_KEY = P + "walk_step"
st.session_state[WALK_KEY] = min(st.session_state.get(WALK_KEY, len(walk) - 1), len(walk) - 1)


def walk_to(step: int) -> None:
    st.session_state[WALK_KEY] = max(0, min(len(walk) - 1, step))


at_step = st.session_state[WALK_KEY]
t1, t2 = st.columns([1.5, 1])
with t1:
    b1, b2, b3 = st.columns([1.35, 1, 2.65], vertical_alignment="center")
    b1.button("◀ Previous", key=P + "walk_prev", on_click=walk_to, args=(at_step - 1,), disabled=at_step == 0)
    b2.button(
        "Next ▶",
        key=P + "walk_next",
        on_click=walk_to,
        args=(at_step + 1,),
        disabled=at_step == len(walk) - 1,
    )
    b3.markdown(f"**Step {at_step + 1} of {len(walk)}**: {walk[at_step][2]}.")
    table = {"key": [f"{j}: {t}" for j, t in enumerate(tokens)]}
    table.update({column: values for column, values, _ in walk[: at_step + 1]})
    tables.show(
        pd.DataFrame(table),
        key=P + "walk_table",
        index=False,
        height=320,
        formats={c: "{:.4g}" if c[0] in "ew" else "{:.4f}" for c in table if c != "key"},
    )
charts.show(
    charts.bars_spec(
        tokens,
        {"weight": steps.weights},
        "Softmax weights over keys",
        height=360,
        x_title="key",
        y_title="weight",
        file=stem + "_weights",
    ),
    key=P + "wbars",
    where=t2,
)
charts.show(
    charts.bars_spec(
        list(range(len(steps.output))),
        {"Σ w·v": steps.output},
        "The head's output for this query: the weighted sum of value vectors",
        height=240,
        x_title="dimension",
        y_title="value",
        file=stem + "_output",
    ),
    key=P + "out",
)
st.caption(
    "Every head writes such a vector; the output projection mixes the heads and adds the "
    "result to the character's running representation."
)

# ---------------------------------------------------------------- downloads
st.subheader("Take the numbers with you")
st.caption(
    "PNG: the button at the top right of each chart (hover over it). The files hold every head's weights as "
    "[layer][head][query][key], the same layout as `python -m transformer_core trace --json`."
)
continuation = "".join(s.text for s in samples)
ex.download_buttons(
    P,
    export.file_stem("gpt", name, f"L{layer}H{head}", "attention"),
    name,
    view.trace,
    unknown_characters=checked.unknown,
    options={"causal": not nocausal, "positions": not nopos, "ablate": list(ablate)},
    sample={
        "text": text + continuation,
        "continuation": continuation,
        "settings": {
            "max_new_tokens": int(max_new),
            "temperature": float(temperature),
            "top_k": int(top_k) or None,
            "top_p": float(top_p) if top_p < 1 else None,
            "seed": int(seed),
        },
    },
    selected_head={"layer": layer, "head": head},
)
