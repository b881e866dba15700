"""The /gpt page's panels below the grid: sampling settings, the sampled text, the
next-character chart, and the walk of one query through softmax. Each draws one thing;
the numbers arrive computed (attention_lab.models.explorer_compute, attention_lab.explorers.query_walk)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from attention_lab.charts import component, export
from attention_lab.charts import specs as charts
from attention_lab.explorers.explorer_html import sampled_text_html, walk_formula_html
from attention_lab.explorers.query_walk import WalkStep, softmax_walk, walk_table
from attention_lab.frame import tables
from attention_lab.frame.markdown_safe import md_code
from attention_lab.frame.state import shown, take_ignored
from attention_lab.models.explorer_compute import Sample, sampled_distribution, top_tokens
from attention_lab.viewmodel.gpt import BeamSettings, SamplingSettings
from transformer_core.interp import HeadMerge, QuerySteps, distribution_shift
from transformer_core.interp.generated import GeneratedWindow
from transformer_core.io import Tokenizer


def sampled_text(
    prefix: str, prompt: str, unknown: list[str], samples: list[Sample], unit: str = "character"
) -> None:
    """The prompt and its continuation shaded by probability, and every step in a table."""
    st.html(sampled_text_html(prompt, unknown, samples))
    st.caption(
        f"Darker = the model was surer of the {unit} it drew. Hover a {unit} for its "
        "probability and the alternatives it was weighing."
    )
    with st.expander(f"Every sampled {unit} with its top alternatives"):
        frame = pd.DataFrame(
            {
                "step": range(1, len(samples) + 1),
                "sampled": [s.label for s in samples],
                "probability": [s.prob for s in samples],
                "alternatives": ["  ".join(f"{lab} {p:.2f}" for lab, p in s.top) for s in samples],
            }
        )
        tables.show(
            frame,
            key=prefix + "samples",
            index=False,
            height=260,
            formats={"probability": "{:.3f}"},
            bars={"probability": (0.0, 1.0)},
        )


def _union_of_top(tokenizer: Tokenizer, k: int, *distributions: np.ndarray) -> list[int]:
    """Ids of the k likeliest of each distribution (with weight), in order, without repeats."""
    ids = [i for probs in distributions for i, _, p in top_tokens(probs, tokenizer, k) if p > 0]
    return list(dict.fromkeys(ids))


def ablation_shift(
    prefix: str, name: str, tokenizer: Tokenizer, base: np.ndarray, ablated: np.ndarray, heads: str
) -> None:
    """The next character before and after the ablation, and how far the distribution moved."""
    next_shift(prefix, name, tokenizer, {"all heads": base, "with ablation": ablated}, "ablation")
    st.caption(
        f"Ablating {heads} moves this much probability. Try heads one at a time to find "
        "the ones the prediction depends on."
    )


def window_shift(
    prefix: str, name: str, tokenizer: Tokenizer, base: np.ndarray, banded: np.ndarray, w: int
) -> None:
    """The next character with full causal attention and with a sliding window of w."""
    next_shift(prefix, name, tokenizer, {"full attention": base, f"window {w}": banded}, "the window")
    st.caption(
        f"With a window of {w}, every query reads only the {w} most recent "
        f"{'positions' if w > 1 else 'position'} (itself included): "
        "every map is a band along its diagonal. What the model needed from further back is gone."
    )


def next_shift(
    prefix: str, name: str, tokenizer: Tokenizer, ways: dict[str, np.ndarray], change: str
) -> None:
    """Bars of the next character's probabilities two ways (before, after `change`), and how far
    the distribution moved (total variation, KL)."""
    (before, base), (after, changed) = ways.items()
    tv, kl = distribution_shift(base, changed)
    ids = _union_of_top(tokenizer, 6, base, changed)
    spec = charts.bars_spec(
        tokenizer.token_labels(ids),
        {before: base[ids], after: changed[ids]},
        f"Next character: before and after {change}",
        height=250,
        file=export.file_stem("gpt", name, "next_" + ("ablated" if change == "ablation" else "windowed")),
    )
    component.show(spec, key=prefix + "next")
    m1, m2 = st.columns(2)
    m1.metric(
        "Total variation",
        f"{tv:.3f}",
        help="Half the summed absolute change in probability: 0 = same, 1 = disjoint.",
    )
    m2.metric(
        "KL(before ‖ after)",
        f"{kl:.3f}",
        help=f"In nats: the extra surprise of predicting with {change}.",
    )


def next_character(
    prefix: str,
    name: str,
    tokenizer: Tokenizer,
    probs: np.ndarray,
    settings: SamplingSettings,
    title: str = "Next character after the prompt",
    unit: str = "character",
    beam: BeamSettings | None = None,
) -> None:
    """The temperature moment: what the model says next, and the distribution the dice are thrown
    on; for beam search, the model's distribution alone (nothing is drawn)."""
    if beam is not None:
        ids = _union_of_top(tokenizer, 10, probs)[:14]
        labels, series = tokenizer.token_labels(ids), {"model (softmax of the logits)": probs[ids]}
        spec = charts.bars_spec(labels, series, title, height=250, file=export.file_stem("gpt", name, "next"))
        component.show(spec, key=prefix + "next")
        st.caption(
            f"Beam search draws nothing: at every step it extends each of the {beam.width} kept outputs "
            f"by every {unit}, and keeps the {beam.width} with the highest total log-probability."
        )
        return
    sampled = sampled_distribution(probs, settings.temperature, settings.top_k, settings.top_p)
    ids = _union_of_top(tokenizer, 10, probs, sampled)[:14]
    spec = charts.bars_spec(
        tokenizer.token_labels(ids),
        {"model (softmax of the logits)": probs[ids], "sampled from": sampled[ids]},
        title,
        height=250,
        file=export.file_stem("gpt", name, "next"),
    )
    component.show(spec, key=prefix + "next")
    kept = int((sampled > 0).sum())
    st.caption(
        f"Sampled from: {', '.join(settings.described())}: {kept} of {len(sampled):,} {unit}s can be drawn; "
        f"the most likely one has {sampled.max():.0%} "
        f"(the model gives it {probs[int(sampled.argmax())]:.0%}). "
        "Lower temperature sharpens, higher flattens; top-k and top-p cut the tail."
    )


def place(tokens: list[str], i: int, unit: str = "character") -> str:
    """A position as people find it: its character (token) and where it stands, in the numbers
    the query picker shows ('the last character, `o`, at position 17'), never an index alone."""
    which = "the last " if i == len(tokens) - 1 else "the first " if i == 0 else "the "
    return f"{which}{unit} {md_code(tokens[i])} at position {i}"


def query_picker(prefix: str, tokens: list[str], where: Any, unit: str = "character") -> int:
    """Which query character (token) to walk through: the last one, unless the state (a link, or
    the picker itself) names another for this same prompt; a new prompt starts at its last one.
    A link's query that cannot be shown is named with the position shown instead."""
    positions = list(range(len(tokens)))
    key, picked_for = prefix + "query", prefix + "query_prompt"
    new_prompt = picked_for in st.session_state and st.session_state[picked_for] != tokens
    if new_prompt or st.session_state.get(key) in (None, -1):  # -1: the page's default, the last one
        st.session_state[key] = len(tokens) - 1
    asked, last = st.session_state.get(key), len(tokens) - 1
    if (raw := take_ignored(key)) is not None:  # not a position at all (-5, abc): init_state left it here
        st.warning(
            f"Ignored from the link: {md_code(f'query={shown(raw)}')} (showing {place(tokens, last, unit)}). "
            "A query is a position of the prompt, from 0.",
            icon=":material/link_off:",
        )
    elif asked not in positions:  # past the prompt
        st.info(
            f"{md_code(f'query={shown(str(asked))}')} is not available: the prompt has {len(tokens)} "
            f"{unit}s; showing {place(tokens, last, unit)}.",
            icon=":material/info:",
        )
    if asked not in positions:
        st.session_state[key] = last
    st.session_state[picked_for] = list(tokens)
    return int(
        where.selectbox(
            f"Query {unit}",
            positions,
            key=prefix + "query",
            persist_state="session",
            format_func=lambda i: f"position {i}: {tokens[i]}",
        )
    )


def walk_formula(
    steps: QuerySteps, scheme: str, where: Any, *, layer: int, head: int, query: int, token: str
) -> None:
    """The walk's formula, with this query's d_k and scale spelled out."""
    d_k = steps.q.shape[0]
    has_bias = steps.bias is not None
    where.html(walk_formula_html(has_bias))
    where.caption(
        f"Layer {layer}, head {head}, query {md_code(token)} at position {query}; "
        f"d_k = {d_k}, so the scores are multiplied by 1/√{d_k} = {steps.scale:.4f}."
        + (f" {scheme} adds the distance penalty b_j." if has_bias else "")
    )


def query_and_keys(
    prefix: str, steps: QuerySteps, scheme: str, tokens: list[str], token: str, stem: str
) -> None:
    """The query vector as bars beside the key vectors as a matrix (before and after RoPE when it rotates)."""
    d_k = steps.q.shape[0]
    rot = steps.rotated
    vecs = {f"q (before {scheme})": steps.q_raw, f"q (after {scheme})": steps.q} if rot else {"q": steps.q}
    v1, v2 = st.columns(2)
    q_spec = charts.bars_spec(
        list(range(d_k)),
        vecs,
        f"Query vector of '{token}'",
        height=260,
        x_title="dimension",
        y_title="value",
        file=stem + "_q",
    )
    component.show(q_spec, key=prefix + "qvec", where=v1)
    if not rot:
        spec = charts.matrix_spec(
            steps.k, tokens, "Key vectors, one row per key", value_name="k", file=stem + "_keys"
        )
        component.show(spec, key=prefix + "kmat", where=v2)
        return
    after, before = v2.tabs([f"keys after {scheme}", f"keys before {scheme}"])
    spec = charts.matrix_spec(
        steps.k, tokens, "Key vectors, rotated: what the scores use", value_name="k", file=stem + "_keys"
    )
    component.show(spec, key=prefix + "kmat", where=after)
    raw = charts.matrix_spec(
        steps.k_raw, tokens, "Key vectors before the rotation", value_name="k", file=stem + "_keys_raw"
    )
    component.show(raw, key=prefix + "kraw", where=before)
    st.caption(
        "RoPE turns each pair of dimensions of q and k by an angle that grows with the position, "
        "so q·k depends on how far apart the two characters are. Hover the bars to compare."
    )


def _walk_stepper(prefix: str, walk: list[WalkStep], tokens: list[str]) -> None:
    """Previous / Next through the walk, and the table of the steps revealed so far; it opens
    on step 1, as a lecture walks it."""
    key = prefix + "walk_step"
    last = len(walk) - 1
    st.session_state[key] = min(st.session_state.get(key, 0), last)

    def walk_to(step: int) -> None:
        st.session_state[key] = max(0, min(last, step))

    at = st.session_state[key]
    b1, b2, b3 = st.columns([1.35, 1, 2.65], vertical_alignment="center")
    b1.button("◀ Previous", key=prefix + "walk_prev", on_click=walk_to, args=(at - 1,), disabled=at == 0)
    b2.button("Next ▶", key=prefix + "walk_next", on_click=walk_to, args=(at + 1,), disabled=at == last)
    b3.markdown(f"**Step {at + 1} of {len(walk)}**: {walk[at].says}.")
    table = walk_table(tokens, walk, at)
    formats = {c: "{:.4g}" if c[0] == "e" else "{:.4f}" for c in table if c != "key"}
    formats["weight w"] = charts.weight_text  # as every tip and table writes a weight
    tables.show(pd.DataFrame(table), key=prefix + "walk_table", index=False, height=320, formats=formats)


def softmax_steps(
    prefix: str, steps: QuerySteps, scheme: str, tokens: list[str], stem: str, sent: np.ndarray | None = None
) -> None:
    """The walk from q·k to the weights one step at a time (and to each key's share sent, given
    `sent`), the weights as bars, and the head's output."""
    left, right = st.columns([1.5, 1])
    with left:
        _walk_stepper(prefix, softmax_walk(steps, scheme, sent=sent), tokens)
    weights = charts.bars_spec(
        tokens,
        {"weight": steps.weights},
        "Softmax weights over keys",
        height=360,
        x_title="key",
        y_title="weight",
        file=stem + "_weights",
    )
    component.show(weights, key=prefix + "wbars", where=right)
    output = charts.bars_spec(
        list(range(len(steps.output))),
        {"Σ w·v": steps.output},
        "The head's output for this query: the weighted sum of value vectors",
        height=240,
        x_title="dimension",
        y_title="value",
        file=stem + "_output",
    )
    component.show(output, key=prefix + "out")


def heads_merged(prefix: str, merge: HeadMerge, layer: int, head: int, token: str, stem: str) -> None:
    """Every head of the layer at this query, then the heads side by side and W_O applied: the
    step after the walk, where the heads' findings become one vector again."""
    n_heads, d_head = merge.heads.shape
    heads = charts.matrix_spec(
        merge.heads,
        [f"head {h}" + (" ◀" if h == head else "") for h in range(n_heads)],
        f"Layer {layer}, query {token}: every head's output (d_head = {d_head})",
        height=max(180, 34 * n_heads + 110),
        value_name="value",
        row_name="head",
        file=stem + "_heads",
    )
    mixed = charts.matrix_spec(
        np.stack([merge.concat, merge.output]),
        ["concat(heads)", "× W_Oᵀ + b_O"],
        f"The heads side by side ({n_heads} × {d_head} = {merge.concat.size}), then mixed by W_O",
        height=190,
        value_name="value",
        row_name="",
        file=stem + "_merged",
    )
    component.show(heads, key=prefix + "heads_merged")
    component.show(mixed, key=prefix + "heads_mixed")


# ---------------------------------------------------------------- attention over the sample


def sample_toggle(prefix: str) -> bool:
    """Whether the maps, the walk and the export trace the prompt alone or prompt + sample."""
    return bool(
        st.toggle(
            "Show attention over the sampled text too",
            key=prefix + "sampled",
            persist_state="session",
            help="Trace the prompt and what the model wrote after it (section 2): every map, the query "
            "walk and the JSON then cover the sampled characters, right of the dashed line.",
        )
    )


def window_note(window: GeneratedWindow, n_sampled: int, max_len: int, unit: str) -> None:
    """Say that prompt + sample is traced, and what was cut when it is longer than the model's block."""
    if not window.dropped:
        st.caption(
            f"Tracing the prompt and the {n_sampled} sampled {unit}s: sampled keys are right "
            f"of the dashed line, sampled queries are rows {window.generated_from} and below."
        )
        return
    st.info(
        f"Prompt and sample have {window.dropped + max_len} {unit}s, more than this "
        f"model's block of {max_len}: the maps show the last {max_len} (the first {window.dropped} are "
        "cut), so their first rows see less context than the sampler did.",
        icon=":material/crop:",
    )


def _sample_at(window: GeneratedWindow, samples: list[Sample], position: int) -> Sample:
    """The sampled character at `position` of the traced text."""
    return samples[window.first_sample + position - window.generated_from]


def sampled_picker(
    prefix: str, window: GeneratedWindow, tokens: list[str], samples: list[Sample], unit: str = "character"
) -> int:
    """Which sampled character to explain: the sample as a row of characters to click (each a
    radio button: Tab and Space reach it too). The pick and section 3's query stay together:
    a new sample opens on the character the walked query predicts (else its first), a pick walks
    the position before it, and a pick survives the toggle going off and on."""
    positions = list(range(max(window.generated_from, 1), len(tokens)))  # each has a query before it
    key, last = prefix + "explain", prefix + "explain_last"

    def walk(pick: int) -> None:
        st.session_state[last] = pick
        st.session_state[prefix + "query"] = pick - 1
        st.session_state[prefix + "query_prompt"] = list(tokens)  # query_picker: not a new prompt

    fresh = st.session_state.get(prefix + "explain_for") != window.text
    if fresh:
        st.session_state[prefix + "explain_for"] = window.text
        asked = st.session_state.get(prefix + "query")
        after_query = (asked or 0) + 1
        st.session_state[last] = after_query if after_query in positions else positions[0]
        if after_query not in positions and (asked or 0) >= 0:  # a query inside the prompt (-1: the last)
            st.info(
                f"{md_code(f'query={asked}')} lies inside the prompt: with the sample traced, section 3 "
                f"walks the query before the picked sampled {unit}, "
                f"{place(tokens, st.session_state[last] - 1, unit)}.",
                icon=":material/info:",
            )
    if fresh or st.session_state.get(key) not in positions:  # a new sample, or the picker back on
        st.session_state[key] = st.session_state[last]
        walk(st.session_state[last])

    def picked() -> None:
        if st.session_state.get(key) in positions:
            walk(st.session_state[key])
        else:  # a click on the picked one unpicks it: keep it
            st.session_state[key] = st.session_state[last]

    choice = st.pills(
        f"Click a sampled {unit} to explain it",
        positions,
        key=key,
        format_func=lambda i: f"{tokens[i]} {i}",  # unique: Streamlit maps a pill back by its text
        on_change=picked,
        help="Its query row (the position before it, which predicted it) and the alternatives it beat; "
        "section 3 walks that query.",
    )
    return int(choice if choice is not None else st.session_state[last])


def explain_sampled(
    window: GeneratedWindow,
    tokens: list[str],
    samples: list[Sample],
    picked: int,
    row: np.ndarray,
    where: tuple[int, int],
) -> None:
    """Why the picked character: its probability, the alternatives, and where its query looked."""
    s = _sample_at(window, samples, picked)
    alternatives = ", ".join(f"{md_code(lab)} {p:.2f}" for lab, p in s.top)
    top = np.argsort(-row)[:3]
    looked = ", ".join(f"{md_code(tokens[j])} at {j} ({row[j]:.2f})" for j in top)
    st.markdown(
        f"{md_code(s.label)} at position {picked} was drawn with p = {s.prob:.3f} when position "
        f"{picked - 1} ({md_code(tokens[picked - 1])}) was the query. The sampler weighed: {alternatives}. "
        f"Its query row in L{where[0]} H{where[1]} looks most at {looked}."
    )
