"""Shared pieces of the two explorer pages (/gpt and /reversal).

Three layers, top to bottom:
- pure helpers (no Streamlit): input checks and labels (the attention arithmetic shown
  step by step and the head scores live in transformer_core.interp.inspection);
- computations on a checkpoint through the transformer_core API, cached with
  st.cache_data keyed by (checkpoint, device, weights checksum, text, options) for
  shipped models, and never cached globally for a user's own models;
- widgets: head selectors, the clickable grid next to one large head, downloads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st
import torch

from lab import export, plots
from lab.resources import MY_MODELS_KEY, current_device, load_model
from transformer_core.capture import AttentionCapture
from transformer_core.config import InferenceOptions
from transformer_core.generation import generate, greedy_decode
from transformer_core.interp.inspection import (  # noqa: F401  (the pages use them as ex.*)
    QuerySteps,
    anti_diagonal_scores,
    distribution_shift,
    future_cells,
    query_steps,
    record_arrays,
    softmax_allowed,
)
from transformer_core.interp.trace import trace_gpt, trace_seq2seq
from transformer_core.io.checkpoint import Checkpoint
from transformer_core.io.data import encode_source
from transformer_core.io.tokenizer import PAD_ID, CharTokenizer

CACHE_ENTRIES = 64

# ---------------------------------------------------------------- pure helpers

_CHAR_NAMES = {" ": "space", "\n": "newline", "\t": "tab", "\r": "carriage return"}


def char_name(ch: str) -> str:
    """A readable name for one character that needs no special font (emoji become U+1F600)."""
    if ch in _CHAR_NAMES:
        return _CHAR_NAMES[ch]
    if ch.isprintable() and ord(ch) < 0x2000:
        return f"'{ch}'"
    return f"U+{ord(ch):04X}"


def md_code(text: str) -> str:
    """Inline code in Markdown that survives backticks inside the text."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


@dataclass(frozen=True)
class CheckedInput:
    """What a page does with the text a user typed.

    text: what the model gets (lowercased when asked); problem: why nothing can run
    (empty, too long), else None; unknown: distinct characters that become <unk>.
    """

    raw: str
    text: str
    problem: str | None
    lowered: bool
    unknown: list[str]


def check_input(
    raw: str, tokenizer: CharTokenizer, max_chars: int, *, lowercase: bool = False
) -> CheckedInput:
    text = raw.lower() if lowercase else raw
    lowered = text != raw
    if not raw:
        return CheckedInput(raw, text, "The input is empty: type at least one character.", lowered, [])
    if len(raw) > max_chars:
        return CheckedInput(
            raw, text,
            f"The input has {len(raw)} characters; this model takes at most {max_chars}. Shorten it.",
            lowered, [],
        )
    encoded = tokenizer.encode_checked(text)
    unknown = list(dict.fromkeys(c for _, c in encoded.unknown))
    return CheckedInput(raw, text, None, lowered, unknown)


def top_tokens(probs: np.ndarray, tokenizer: CharTokenizer, k: int = 8) -> list[tuple[int, str, float]]:
    order = np.argsort(-probs)[:k]
    labels = tokenizer.token_labels([int(i) for i in order])
    return [(int(i), lab, float(probs[i])) for i, lab in zip(order, labels, strict=True)]


# ---------------------------------------------------------------- options


def options_key(*, causal: bool = True, padding_mask: bool = True, positions: bool = True,
                ablate: tuple[tuple[str, int, int], ...] = ()) -> tuple:
    """A hashable, sorted description of InferenceOptions (what caches are keyed by)."""
    return (bool(causal), bool(padding_mask), bool(positions), tuple(sorted(ablate)))


def make_options(key: tuple) -> InferenceOptions:
    causal, padding_mask, positions, ablate = key
    return InferenceOptions(causal=causal, padding_mask=padding_mask, positions=positions,
                            ablate=frozenset(ablate))


# ---------------------------------------------------------------- computations


@dataclass(frozen=True)
class GPTView:
    tokens: list[str]
    attention: np.ndarray  # (L, H, T, T)
    next_probs: np.ndarray  # (V,)
    records: list[dict[str, Any]]  # per layer, see record_arrays


@dataclass(frozen=True)
class Sample:
    label: str  # readable token (space as ␣)
    text: str  # the character itself
    prob: float
    top: list[tuple[str, float]]


@dataclass(frozen=True)
class ReversalView:
    output: str
    source_tokens: list[str]
    target_tokens: list[str]
    attention: dict[str, np.ndarray]


@dataclass(frozen=True)
class PaddingView:
    texts: list[str]
    tokens: list[list[str]]  # per row, PAD shown as <pad>
    is_pad: np.ndarray  # (B, Ts) bool
    attention: np.ndarray  # (B, L, H, Ts, Ts) encoder self-attention
    outputs: list[str]


def gpt_view_plain(ckpt: Checkpoint, text: str, opts: tuple) -> GPTView:
    tr = trace_gpt(ckpt.model, ckpt.tokenizer, text, make_options(opts))
    layers = sorted((r for r in tr.capture.records if r.kind == "self"), key=lambda r: r.layer)
    return GPTView(tr.tokens, tr.attention["self"], tr.next_token_probs, [record_arrays(r) for r in layers])


def generate_plain(ckpt: Checkpoint, text: str, max_new: int, temperature: float, top_k: int,
                   top_p: float, seed: int, opts: tuple) -> list[Sample]:
    tok = ckpt.tokenizer
    steps = generate(
        ckpt.model, tok.encode(text), max_new, temperature=temperature,
        top_k=top_k or None, top_p=top_p if top_p < 1 else None, seed=seed, options=make_options(opts),
    )
    out = []
    for s in steps:
        out.append(Sample(
            label=tok.token_labels([s.token])[0], text=tok.decode([s.token], skip_special=False),
            prob=s.prob, top=[(tok.token_labels([i])[0], p) for i, p in s.top],
        ))
    return out


def reversal_plain(ckpt: Checkpoint, text: str, opts: tuple) -> ReversalView:
    tr = trace_seq2seq(ckpt.model, ckpt.tokenizer, text, make_options(opts), max_new_tokens=len(text) + 2)
    return ReversalView(tr.output, tr.source_tokens, tr.target_tokens, tr.attention)


@torch.no_grad()
def padding_plain(ckpt: Checkpoint, texts: tuple[str, ...], opts: tuple) -> PaddingView:
    """Encoder self-attention of a PAD-padded batch, and each row's greedy output."""
    model, tok = ckpt.model, ckpt.tokenizer
    options = make_options(opts)
    src = encode_source(tok, list(texts), next(model.parameters()).device)
    capture = AttentionCapture()
    model.encode(src, options=options, capture=capture)
    attention = np.stack(
        [capture.weights("encoder_self", b).float().cpu().numpy() for b in range(len(texts))]
    )
    outputs = greedy_decode(model, src, max(len(t) for t in texts) + 2, options=options)
    rows = src.cpu().tolist()
    return PaddingView(
        texts=list(texts), tokens=[tok.token_labels(r) for r in rows],
        is_pad=(src == PAD_ID).cpu().numpy(), attention=attention, outputs=[tok.decode(o) for o in outputs],
    )


# the biggest entries (q, k, v and scores of every layer), so half as many
@st.cache_data(max_entries=CACHE_ENTRIES // 2, show_spinner=False)
def _gpt_view_cached(_ckpt: Checkpoint, model_key: tuple, text: str, opts: tuple) -> GPTView:
    return gpt_view_plain(_ckpt, text, opts)


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def _generate_cached(_ckpt: Checkpoint, model_key: tuple, text: str, max_new: int, temperature: float,
                     top_k: int, top_p: float, seed: int, opts: tuple) -> list[Sample]:
    return generate_plain(_ckpt, text, max_new, temperature, top_k, top_p, seed, opts)


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def _reversal_cached(_ckpt: Checkpoint, model_key: tuple, text: str, opts: tuple) -> ReversalView:
    return reversal_plain(_ckpt, text, opts)


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def _padding_cached(_ckpt: Checkpoint, model_key: tuple, texts: tuple[str, ...], opts: tuple) -> PaddingView:
    return padding_plain(_ckpt, texts, opts)


def is_user_model(name: str) -> bool:
    return name in st.session_state.get(MY_MODELS_KEY, {})


MEMO_KEY, MEMO_ENTRIES = "_explorer_memo", 8


def _run(cached: Callable[..., Any], plain: Callable[..., Any], name: str, *args: Any) -> Any:
    """A shipped model's result comes from the shared cache. A user's own model never
    keys the global cache (its name means nothing to other users): its results are kept
    in that user's session only, the last few, keyed by the model object itself."""
    ckpt = load_model(name)
    if is_user_model(name):
        memo: dict = st.session_state.setdefault(MEMO_KEY, {})
        key = (plain.__name__, id(ckpt), args)
        if key not in memo:
            while len(memo) >= MEMO_ENTRIES:
                memo.pop(next(iter(memo)))
            memo[key] = plain(ckpt, *args)
        return memo[key]
    key = (name, str(current_device()), ckpt.meta.get("weights_sha256", ""))
    return cached(ckpt, key, *args)


def gpt_view(name: str, text: str, opts: tuple) -> GPTView:
    return _run(_gpt_view_cached, gpt_view_plain, name, text, opts)


def sample(name: str, text: str, max_new: int, temperature: float, top_k: int, top_p: float, seed: int,
           opts: tuple) -> list[Sample]:
    return _run(_generate_cached, generate_plain, name, text, max_new, temperature, top_k, top_p, seed, opts)


def reversal_view(name: str, text: str, opts: tuple) -> ReversalView:
    return _run(_reversal_cached, reversal_plain, name, text, opts)


def padding_view(name: str, texts: tuple[str, ...], opts: tuple) -> PaddingView:
    return _run(_padding_cached, padding_plain, name, texts, opts)


# ---------------------------------------------------------------- widgets


def checkpoint_note(ckpt: Checkpoint) -> str:
    c = ckpt.config
    steps = ckpt.metrics.get("steps")
    return (f"positions **{c.positions}** · d_model {c.d_model} · {c.n_layers} layers × {c.n_heads} heads · "
            f"d_k = {c.d_head}" + (f" · trained for {steps} steps" if steps else ""))


def show_input_notes(checked: CheckedInput, *, what: str = "model") -> None:
    """Info lines for lowercasing and for characters the vocabulary lacks."""
    if checked.lowered:
        st.info(f"The {what} only knows lowercase letters, so your input was lowercased to "
                f"**{checked.text}**.", icon=":material/text_fields:")
    if checked.unknown:
        names = ", ".join(char_name(c) for c in checked.unknown)
        st.warning(f"Not in the vocabulary, replaced by `<unk>`: {names}.", icon=":material/help:")


def clamp_state(key: str, options: list[Any], default: Any) -> None:
    """Keep a selector's state inside its options (a checkpoint switch can shrink them)."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default


def head_selectors(
    prefix: str, n_layers: int, n_heads: int, cols: list[Any] | None = None
) -> tuple[int, int]:
    """Layer and head selectboxes (in the two given columns, else in two new ones)."""
    clamp_state(prefix + "layer", list(range(n_layers)), 0)
    clamp_state(prefix + "head", list(range(n_heads)), 0)
    c1, c2 = cols or st.columns(2)
    layer = c1.selectbox("Layer", list(range(n_layers)), key=prefix + "layer")
    head = c2.selectbox("Head", list(range(n_heads)), key=prefix + "head")
    return int(layer), int(head)


def _pick_head(chart_key: str, prefix: str) -> None:
    picked = plots.selected_head(st.session_state.get(chart_key))
    if picked is not None:
        st.session_state[prefix + "layer"], st.session_state[prefix + "head"] = picked


def grid_and_head(
    attention: np.ndarray, query_tokens: list[str], key_tokens: list[str], *, prefix: str, name: str,
    layer: int, head: int, grid_title: str, head_title: str, cell_titles: list[list[str]] | None = None,
    highlight: np.ndarray | None = None, highlight_name: str = "future position",
) -> None:
    """The whole (L, H) grid, clickable, next to the selected head drawn large.

    Sized for a 1280 x 720 projector: the grid column is about 440 px wide, so each head
    gets a roughly square cell of 440 / n_heads pixels.
    """
    L, H = attention.shape[:2]
    cell_px = int(min(150, max(70, 440 / H)))
    left, right = st.columns([1.15, 1], gap="medium")
    with left:
        chart_key = f"{prefix}{name}_grid"
        st.plotly_chart(
            plots.attention_grid(attention, query_tokens, key_tokens, title=grid_title,
                                 cell_titles=cell_titles, selected=(layer, head), cell_px=cell_px,
                                 colorbar=False, clickable=True),
            key=chart_key, on_select=functools.partial(_pick_head, chart_key, prefix),
            selection_mode="points", config=plots.PNG_CONFIG,
        )
    with right:
        height = max(330, min(520, cell_px * L + 60))
        st.plotly_chart(
            plots.head_heatmap(attention[layer, head], query_tokens, key_tokens, head_title,
                               highlight=highlight, highlight_name=highlight_name, height=height),
            key=f"{prefix}{name}_head", config=plots.PNG_CONFIG,
        )


def download_buttons(prefix: str, stem: str, payload: Callable[[], dict[str, Any]],
                     attention: dict[str, np.ndarray], query_tokens: dict[str, list[str]],
                     key_tokens: dict[str, list[str]]) -> None:
    """JSON ([layer][head][query][key], like `trace --json`) and long-form CSV, built on click."""
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem)[:60] or "attention"
    row = st.container(horizontal=True)
    row.download_button(
        "Attention as JSON", data=lambda: export.attention_json_payload(payload()),
        file_name=f"{stem}.json", mime="application/json", on_click="ignore",
        icon=":material/download:", key=prefix + "json",
    )
    row.download_button(
        "Attention as CSV", data=lambda: export.attention_csv(attention, query_tokens, key_tokens),
        file_name=f"{stem}.csv", mime="text/csv", on_click="ignore", icon=":material/download:",
        key=prefix + "csv",
    )
