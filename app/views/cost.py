"""What attention costs (/cost): a Transformer's parameters read from the model the library
builds, the chapter's hand count beside them, FLOPs and attention memory across the
sequence length, and one forward pass timed on this server."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attention_lab.frame import tables
from attention_lab.frame.state import clamp_state, init_state, stop, write_state
from attention_lab.lesson_pages import cost_charts as cc
from attention_lab.lesson_pages import lesson_views
from attention_lab.lesson_pages.lesson_page import chart_writer, in_range
from attention_lab.lessons import cost as lesson
from attention_lab.models.compute import run_cached
from attention_lab.models.resources import (
    checkpoint_label,
    current_device,
    load_model,
    model_choices,
    shipped_checkpoints,
)
from transformer_core import CheckpointError, ConfigError, InputError
from transformer_core import cost as counts

P = "cost_"  # session_state prefix; the URL keeps the short names
ARCHS = {"seq2seq": "encoder-decoder (chapter 004)", "gpt": "decoder-only (GPT)"}
POSITIONS = ["sinusoidal", "learned", "rope", "alibi", "t5", "none"]
NORM_POSITIONS = ["post", "pre"]
NORMS = ["layernorm", "rmsnorm"]
ACTIVATIONS = ["relu", "gelu", "swiglu"]
DEFAULTS = {
    "arch": lesson.CHAPTER.arch,
    "d_model": lesson.CHAPTER.d_model,
    "heads": lesson.CHAPTER.n_heads,
    "d_ff": lesson.CHAPTER.d_ff,
    "layers": lesson.CHAPTER.n_layers,
    "vocab": lesson.CHAPTER.vocab_size,
    "T": lesson.CHAPTER.T,
    "positions": lesson.CHAPTER.positions,
    "norm_position": lesson.CHAPTER.norm_position,
    "norm": lesson.CHAPTER.norm,
    "activation": lesson.CHAPTER.activation,
    "tied": lesson.CHAPTER.tie_weights,
    "attn_bias": lesson.CHAPTER.attention_bias,
    "window": 0,
    "kv_model": "",
    "kv_text": "The attention",
    "kv_new": 24,
    "kv_step": 24,
    "kv_layer": 0,
    "kv_head": 0,
}
VALID = {
    "arch": lambda v: v in ARCHS,
    "d_model": in_range(8, 2048),
    "heads": in_range(1, 32),
    "d_ff": in_range(8, 8192),
    "layers": in_range(1, 48),
    "vocab": in_range(4, 262_144),
    "T": in_range(1, 8192),
    "window": in_range(0, 8192),
    "kv_text": lambda v: len(v) <= 120,
    "kv_new": in_range(1, lesson.MAX_CACHE_STEPS),
    "kv_step": in_range(1, lesson.MAX_CACHE_STEPS),
    "kv_layer": in_range(0, 47),
    "kv_head": in_range(0, 31),
    "positions": lambda v: v in POSITIONS,
    "norm_position": lambda v: v in NORM_POSITIONS,
    "norm": lambda v: v in NORMS,
    "activation": lambda v: v in ACTIVATIONS,
}
#: what the chapter prints for its baselines and its model (parameter counts)
CHAPTER_REPORTS = {"reverse-gru": 60_864, "reverse-bahdanau": 106_944, "reverse-sinusoidal": 380_064}
init_state(DEFAULTS, VALID, prefix=P)
chart = chart_writer(P)


def chapter_model() -> None:
    """Every setting back to chapter 004's model (a button's callback, before the widgets)."""
    for name, value in DEFAULTS.items():
        st.session_state[P + name] = value


st.title("What attention costs", anchor=False)
st.markdown(
    "Every number on this page comes from the model the library builds with these settings: its "
    "parameters are counted from the built tensors, its FLOPs follow its own matrix products "
    "(two operations per multiply-add, checked against PyTorch's FLOP counter), and a button times "
    "it. The defaults are chapter 004's reversal Transformer."
)
s = st.columns([2, 1], vertical_alignment="bottom")
s[0].radio(
    "model", list(ARCHS), key=P + "arch", persist_state="session", format_func=ARCHS.get, horizontal=True
)
s[1].button("Chapter 004's model", on_click=chapter_model, help="Every setting back to the defaults.")
c = st.columns(3)
c[0].slider("d_model", 8, 2048, step=8, key=P + "d_model", persist_state="session")
divisors = [h for h in range(1, 33) if int(st.session_state[P + "d_model"]) % h == 0]
clamp_state(
    P + "heads", divisors, max(h for h in divisors if h <= 4), "with this d_model (it must divide it)"
)
c[1].select_slider("heads", divisors, key=P + "heads", persist_state="session")
c[2].slider("d_ff", 8, 8192, step=8, key=P + "d_ff", persist_state="session")
c = st.columns(3)
c[0].slider(
    "layers",
    1,
    48,
    key=P + "layers",
    persist_state="session",
    help="An encoder-decoder has this many in each stack.",
)
c[1].number_input("vocabulary", 4, 262_144, key=P + "vocab", persist_state="session")
c[2].slider("sequence length T", 1, 8192, key=P + "T", persist_state="session")
with st.expander("Inside the block: positions, norms, activation, biases"):
    b = st.columns(4)
    b[0].selectbox("positions", POSITIONS, key=P + "positions", persist_state="session")
    b[1].selectbox("norm position", NORM_POSITIONS, key=P + "norm_position", persist_state="session")
    b[2].selectbox("norm", NORMS, key=P + "norm", persist_state="session")
    b[3].selectbox("activation", ACTIVATIONS, key=P + "activation", persist_state="session")
    b = st.columns(2)
    b[0].toggle("output projection tied to the embedding", key=P + "tied", persist_state="session")
    b[1].toggle("biases in W_Q, W_K, W_V, W_O", key=P + "attn_bias", persist_state="session")

v = {name: st.session_state[P + name] for name in DEFAULTS}
KV = ("kv_model", "kv_text", "kv_new", "kv_step", "kv_layer", "kv_head")  # section 5's own settings
settings = lesson.CostSettings(
    v["arch"], int(v["d_model"]), int(v["heads"]), int(v["d_ff"]), int(v["layers"]), int(v["vocab"]),
    int(v["T"]), v["positions"], v["norm_position"], v["norm"], v["activation"], bool(v["tied"]),
    bool(v["attn_bias"]),
)  # fmt: skip
write_state([k for k in DEFAULTS if k not in KV], prefix=P)
try:
    config = settings.config()
except ConfigError as e:
    st.error(f"These settings build no model: {e}. Change d_model or the number of heads.")
    stop()

# ---------------------------------------------------------------------------------------
st.header("1 · Parameters")
built = lesson_views.parameter_counts(config)
total = sum(built.values())
st.metric("parameters of the built model", f"{total:,}")
table = pd.DataFrame({"parameters": list(built.values())}, index=list(built))
table["share"] = table["parameters"] / total
c1, _ = st.columns([3, 1])
tables.show(table, key=P + "params", where=c1, formats={"parameters": "{:,}", "share": "{:.1%}"})
if settings.arch == "seq2seq":
    cmp = lesson.compare_with_chapter(settings, built)
    est = sum(e for _, e, _ in cmp.rows)
    st.markdown(
        f"**The chapter's hand count** of the same model is **{est:,}**; the built model has "
        f"**{total:,}**. The difference, {est - total:+,}, is"
    )
    st.markdown("\n".join(f"- {n:+,}: {why}" for why, n in cmp.reasons) or "- nothing: they agree.")
    if cmp.unexplained:
        st.warning(f"{cmp.unexplained:+,} parameters differ for a reason not listed above.")
    rows = pd.DataFrame(
        {"chapter's estimate": [e for _, e, _ in cmp.rows], "built model": [b for _, _, b in cmp.rows]},
        index=[part for part, _, _ in cmp.rows],
    )
    c1, _ = st.columns([3, 1])
    tables.show(rows, key=P + "chapter", where=c1, formats={c: "{:,}" for c in rows.columns})
else:
    st.caption("The chapter counts an encoder-decoder; choose that model to see its count beside this one.")
names = tuple(n for n in CHAPTER_REPORTS if n in shipped_checkpoints())
if names:
    st.markdown("**The recurrent baselines** of chapter 004, as shipped with the lab:")
    shipped = pd.DataFrame(
        {
            "parameters here": [n for _, n in lesson_views.baseline_counts(names)],
            "chapter 004's figure": [CHAPTER_REPORTS[name] for name in names],
        },
        index=list(names),
    )
    c1, _ = st.columns([3, 1])
    tables.show(shipped, key=P + "baselines", where=c1, formats={c: "{:,}" for c in shipped.columns})
    st.caption(
        "The chapter's two baseline figures are hand estimates; for its Transformer it prints both, "
        "526,368 by its formula and 380,064 counted from the model it built (the one above). The "
        "shipped models differ in hidden size and vocabulary (26 letters and 4 special tokens here)."
    )

# ---------------------------------------------------------------------------------------
st.header("2 · FLOPs")
T = settings.T
block = counts.block_flops(config, T)
chapter = counts.chapter_block_flops(settings.d_model, settings.d_ff, T)
flops = pd.DataFrame(
    {
        "FLOPs (2 per multiply-add)": [block.attention, block.projections, block.ffn, block.total],
        "chapter's count": [chapter.attention, chapter.projections, chapter.ffn, chapter.total],
    },
    index=[
        "attention: Q·Kᵀ and weights·V",
        "projections W_Q, W_K, W_V, W_O",
        "feed-forward network",
        "one block",
    ],
)
c1, c2 = st.columns([3, 1])
tables.show(flops, key=P + "flops", where=c1, formats={c: "{:,}" for c in flops.columns})
c2.metric(f"one forward pass at T = {T:,}", cc.si(counts.forward_flops(config, T), "FLOP"))
c2.metric("attention : FFN", f"{block.attention / block.ffn:.2f}" if block.ffn else "no FFN")
crossover = counts.crossover_length(config)
st.markdown(
    f"At T = {T:,} attention's share of a block is {block.attention / block.total:.1%}. Its cost grows "
    f"as T²·d, the projections' and the FFN's as T·d²: attention overtakes the FFN at "
    f"**T = {crossover:,.0f}** (T = d_ff for a two-matrix FFN). The chapter counts attention and the "
    "projections in multiply-adds but the FFN in FLOPs, so its ratio is half of this one."
    + (
        " Here the projections and the FFN cost exactly the same (d_ff = 2 · d_model): their two "
        "lines lie on top of each other."
        if block.projections == block.ffn
        else ""
    )
)
curves = lesson_views.cost_curves(settings, int(v["window"]))
chart(cc.flops_chart(curves, T), "flops_fig")

# ---------------------------------------------------------------------------------------
st.header("3 · Memory")
st.slider(
    "sliding window W (0: none)",
    0,
    8192,
    key=P + "window",
    persist_state="session",
    help="Each query sees only the W most recent keys (a banded mask); a banded kernel keeps T·W weights.",
)
W = int(v["window"])
layers = lesson.attention_layers(settings)
H = settings.n_heads
kept = {"every T × T weight": counts.attention_memory(T, H)}
if W:
    kept[f"sliding window W = {W:,}"] = counts.attention_memory(T, H, window=W)
kept["fused kernel"] = counts.attention_memory(T, H, fused=True)
memory = pd.DataFrame(
    {
        "bytes, one layer": list(kept.values()),
        "one layer": [cc.si(b, "B") for b in kept.values()],
        f"all {layers} layers": [cc.si(b * layers, "B") for b in kept.values()],
    },
    index=list(kept),
)
c1, c2 = st.columns([3, 1])
tables.show(memory, key=P + "memory", where=c1, formats={"bytes, one layer": "{:,}"})
c2.metric(f"one layer's weights at T = {T:,}", cc.si(kept["every T × T weight"], "B"))
c2.metric(f"KV cache for T = {T:,}", cc.si(counts.kv_cache_memory(config, T), "B"))
st.markdown(
    f"One layer keeps H·T² weights per example: {H} × {T:,}² × 4 bytes in fp32. A fused kernel "
    "(FlashAttention) computes the same output in tiles and never stores the T × T matrix; it keeps "
    "one softmax statistic per query and head for the backward pass."
)
chart(cc.memory_chart(curves, T, W), "memory_fig")

# ---------------------------------------------------------------------------------------
st.header("4 · Measured on this server")
st.markdown(
    "The FLOP count predicts a time at the rate this machine multiplies plain matrices. One forward "
    "pass of a randomly initialised model at these settings (batch 1) shows how close that is."
)
refusal = lesson.timing_refusal(settings, total)
if refusal:
    st.info(refusal, icon=":material/info:")
elif st.button("Time one forward pass", type="primary"):
    with st.spinner("Timing…"):
        timing = lesson.time_forward(settings, str(current_device()))
    if timing is None:
        st.info("Another timing is running on this server; try again in a moment.", icon=":material/info:")
    else:
        st.session_state[P + "timing"] = (settings, timing)
done = st.session_state.get(P + "timing")
if done and done[0] == settings:
    timing = done[1]
    m = st.columns(3)
    m[0].metric("measured", f"{timing.seconds * 1000:.2f} ms")
    m[1].metric("predicted from the FLOPs", f"{timing.predicted * 1000:.2f} ms")
    m[2].metric("rate reached", cc.si(timing.flops / timing.seconds, "FLOP/s"))
    st.caption(
        f"{cc.si(timing.flops, 'FLOP')} at {cc.si(timing.rate, 'FLOP/s')} (a 256 × 256 matrix product "
        f"here) on {current_device()}. Small models spend most of their time outside matrix products: "
        "norms, softmax and the overhead of each operation."
    )

# ---------------------------------------------------------------------------------------
st.header("5 · The KV cache")
st.markdown(
    "A GPT writes one token at a time, and each new token's query attends to the keys and values of "
    "every token before it. Those never change, so generation keeps them: the **KV cache**. Each step "
    "then computes one position instead of the whole prefix again. Here a trained GPT writes the same "
    "tokens both ways, each step timed, and the next-token logits of the two ways are compared."
)
choices = model_choices("lm")
if not choices:
    st.info("No trained GPT is available yet: the shipped checkpoints appear here once trained.")
    stop()
clamp_state(P + "kv_model", choices, choices[0])
k = st.columns([1, 2, 1])
k[0].selectbox("GPT", choices, key=P + "kv_model", persist_state="session", format_func=checkpoint_label)
k[1].text_input("prompt", key=P + "kv_text", max_chars=120, persist_state="session")
k[2].slider("tokens to write", 1, lesson.MAX_CACHE_STEPS, key=P + "kv_new", persist_state="session")
name = st.session_state[P + "kv_model"]
write_state([k for k in DEFAULTS if k not in ("kv_step", "kv_layer", "kv_head")], prefix=P)
try:
    ckpt = load_model(name)
    cache = run_cached(lesson.cache_lesson, name, st.session_state[P + "kv_text"], int(v["kv_new"]))
except CheckpointError as e:
    st.error(f"Could not load {name}: {e}")
    stop()
except InputError as e:
    st.error(f"That prompt cannot be used: {e}")
    stop()
if not cache.steps:
    st.info("The prompt already fills this model's context: there is no room to write a token.")
    stop()
later = cache.steps[1:] or cache.steps  # step 1 computes the whole prompt either way
cached_ms = sum(s.seconds_cached for s in later) * 1000 / len(later)
full_ms = sum(s.seconds_full for s in later) * 1000 / len(later)
m = st.columns(4)
m[0].metric("per token, with the cache", f"{cached_ms:.2f} ms", help="Mean over steps 2 on.")
m[1].metric("per token, without", f"{full_ms:.2f} ms", help="Mean over steps 2 on.")
m[2].metric("cache at the end", cc.si(cache.cache_bytes[-1], "B"))
m[3].metric("largest logit gap", f"{cache.agree:.1e}")
written = "".join(ckpt.tokenizer.decode([s.token], skip_special=False) for s in cache.steps)
st.markdown(
    f"It wrote **{written!r}** ({len(cache.steps)} tokens). Without the cache, step t computes all "
    f"{cache.prompt_length} + t positions again; with it, only the new one (the first step computes the "
    f"prompt's {cache.prompt_length} either way). The two ways' logits differ by at most "
    f"{cache.agree:.1e}: rounding in float32, not a different answer. The cache costs 2 × layers × T × "
    f"d_model × 4 bytes: {cc.si(cache.cache_bytes[-1], 'B')} for {len(cache.ids) - 1} positions here."
)
chart(cc.cache_time_chart(cache), "kv_time_fig")
cfg = ckpt.config
st.session_state[P + "kv_step"] = min(int(v["kv_step"]), len(cache.steps))  # fewer tokens: the last step
clamp_state(P + "kv_layer", list(range(cfg.n_layers)), 0)
clamp_state(P + "kv_head", list(range(cfg.n_heads)), 0)
o = st.columns(3)
if len(cache.steps) > 1:
    o[0].slider("step", 1, len(cache.steps), key=P + "kv_step", persist_state="session")
o[1].selectbox("layer", list(range(cfg.n_layers)), key=P + "kv_layer", persist_state="session")
o[2].selectbox("head", list(range(cfg.n_heads)), key=P + "kv_head", persist_state="session")
step, layer, head = (int(st.session_state[P + k]) for k in ("kv_step", "kv_layer", "kv_head"))
write_state(list(DEFAULTS), prefix=P)
prefix = cache.ids[: cache.prompt_length + step - 1]  # what step `step` feeds: its last token is the new one
opened = run_cached(lesson.cache_step_view, name, prefix, layer, head)
keys_fig, weights_fig = cc.cache_step_charts(opened, tuple(cache.labels[: len(prefix)]), layer, head)
c1, c2 = st.columns([3, 2])
with c1:
    chart(keys_fig, "kv_keys_fig")
with c2:
    chart(weights_fig, "kv_weights_fig")
    st.caption(
        f"Step {step} feeds {cache.steps[step - 1].fed_cached} "
        f"{'position' if cache.steps[step - 1].fed_cached == 1 else 'positions'} with the cache and "
        f"{cache.steps[step - 1].fed_full} without; its query meets all {len(prefix)} keys either way."
    )
