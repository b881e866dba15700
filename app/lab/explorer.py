"""Shared pieces of the two explorer pages (/gpt and /reversal).

Four layers, top to bottom:
- pure helpers (no Streamlit): input checks and labels (the attention arithmetic shown
  step by step and the head scores live in transformer_core.interp.inspection);
- computations on a checkpoint through the transformer_core API, pure functions of
  (checkpoint, args) that pages run through lab.compute.run_cached;
- figures built from those, cached the same way (by weights, text and options);
- widgets: head selectors, the clickable grid next to one large head, downloads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import streamlit as st
import torch

from lab import charts, export, present, state
from lab.compute import cached_call, run_cached
from lab.state import visible  # noqa: F401  (the pages use it as ex.visible)
from transformer_core import AttentionCapture, InferenceOptions, filter_logits, generate, greedy_decode
from transformer_core.interp import (  # noqa: F401  (the pages use them as ex.*)
    GPTTrace,
    QuerySteps,
    Seq2SeqTrace,
    anti_diagonal_scores,  # noqa: F401  (the page uses it as ex.*)
    distribution_shift,
    future_cells,
    query_steps,
    record_arrays,
    softmax_allowed,
    trace_gpt,
    trace_seq2seq,
)
from transformer_core.io import PAD_ID, CharTokenizer, Checkpoint, encode_source

# ---------------------------------------------------------------- pure helpers

_CHAR_NAMES = {" ": "space", "\n": "newline", "\t": "tab", "\r": "carriage return"}


def char_name(ch: str) -> str:
    """A readable name for one character that needs no special font (emoji become U+1F600)."""
    if ch in _CHAR_NAMES:
        return _CHAR_NAMES[ch]
    if ch.isprintable() and ord(ch) < 0x2000:
        return f"'{ch}'"
    return f"U+{ord(ch):04X}"


def text_colour(
    rgb: tuple[int, int, int], alpha: float = 1.0, backdrop: tuple[int, int, int] = (255, 255, 255)
) -> str:
    """Black or white text on a background of colour rgb at opacity alpha laid over backdrop:
    white where its relative luminance (WCAG) is below 0.3, black above. (The bare WCAG
    crossover, 0.18, keeps black on saturated mid blues, which reads badly on a projector.)"""

    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    shown = [alpha * c + (1 - alpha) * b for c, b in zip(rgb, backdrop, strict=True)]
    lum = 0.2126 * linear(shown[0]) + 0.7152 * linear(shown[1]) + 0.0722 * linear(shown[2])
    return "#ffffff" if lum < 0.3 else "#000000"


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
            raw,
            text,
            f"The input has {len(raw)} characters; this model takes at most {max_chars}. Shorten it.",
            lowered,
            [],
        )
    encoded = tokenizer.encode_checked(text)
    unknown = list(dict.fromkeys(c for _, c in encoded.unknown))
    return CheckedInput(raw, text, None, lowered, unknown)


def top_tokens(probs: np.ndarray, tokenizer: CharTokenizer, k: int = 8) -> list[tuple[int, str, float]]:
    order = np.argsort(-probs)[:k]
    labels = tokenizer.token_labels([int(i) for i in order])
    return [(int(i), lab, float(probs[i])) for i, lab in zip(order, labels, strict=True)]


def sampled_distribution(next_probs: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """The distribution (V,) the sampler actually draws from after the prompt: the model's
    probabilities through the sampler's own temperature / top-k / top-p filter, so the chart
    can never drift from what `generate` does (log-probabilities are logits up to a constant)."""
    logits = torch.log(torch.as_tensor(next_probs, dtype=torch.float64).clamp_min(0))
    return filter_logits(logits, temperature, top_k or None, top_p if top_p < 1 else None).numpy()


# ---------------------------------------------------------------- computations
# Module-level pure functions of (checkpoint, args), run through lab.compute.run_cached:
# cached by the weights' checksum, the device and the arguments (InferenceOptions as is).


@dataclass(frozen=True)
class GPTView:
    """A GPT's trace of one text (its capture dropped) and the numpy parts of every
    layer's capture for the step-by-step view (see record_arrays)."""

    trace: GPTTrace
    records: list[dict[str, Any]]  # per layer

    @property
    def tokens(self) -> list[str]:
        return self.trace.tokens

    @property
    def attention(self) -> np.ndarray:  # (L, H, T, T)
        return self.trace.attention["self"]

    @property
    def next_probs(self) -> np.ndarray:  # (V,)
        return self.trace.next_token_probs


@dataclass(frozen=True)
class Sample:
    label: str  # readable token (space as ␣)
    text: str  # the character itself
    prob: float
    top: list[tuple[str, float]]


@dataclass(frozen=True)
class PaddingView:
    texts: list[str]
    tokens: list[list[str]]  # per row, PAD shown as <pad>
    is_pad: np.ndarray  # (B, Ts) bool
    attention: np.ndarray  # (B, L, H, Ts, Ts) encoder self-attention
    outputs: list[str]


def gpt_view(ckpt: Checkpoint, text: str, options: InferenceOptions) -> GPTView:
    tr = trace_gpt(ckpt.model, ckpt.tokenizer, text, options)
    layers = sorted((r for r in tr.capture.records if r.kind == "self"), key=lambda r: r.layer)
    return GPTView(replace(tr, capture=AttentionCapture()), [record_arrays(r) for r in layers])


def sample(
    ckpt: Checkpoint,
    text: str,
    max_new: int,
    temperature: float,
    top_k: int,
    top_p: float,
    seed: int,
    options: InferenceOptions,
) -> list[Sample]:
    tok = ckpt.tokenizer
    steps = generate(
        ckpt.model,
        tok.encode(text),
        max_new,
        temperature=temperature,
        top_k=top_k or None,
        top_p=top_p if top_p < 1 else None,
        seed=seed,
        options=options,
    )
    return [
        Sample(
            label=tok.token_labels([s.token])[0],
            text=tok.decode([s.token], skip_special=False),
            prob=s.prob,
            top=[(tok.token_labels([i])[0], p) for i, p in s.top],
        )
        for s in steps
    ]


def reversal_view(ckpt: Checkpoint, text: str, options: InferenceOptions) -> Seq2SeqTrace:
    """Greedy output and every head's attention (the capture dropped: the page needs none)."""
    tr = trace_seq2seq(ckpt.model, ckpt.tokenizer, text, options, max_new_tokens=len(text) + 2)
    return replace(tr, capture=AttentionCapture())


@torch.no_grad()
def padding_view(ckpt: Checkpoint, texts: tuple[str, ...], options: InferenceOptions) -> PaddingView:
    """Encoder self-attention of a PAD-padded batch, and each row's greedy output."""
    model, tok = ckpt.model, ckpt.tokenizer
    src = encode_source(tok, list(texts), next(model.parameters()).device)
    capture = AttentionCapture()
    model.encode(src, options=options, capture=capture)
    attention = np.stack(
        [capture.weights("encoder_self", b).float().cpu().numpy() for b in range(len(texts))]
    )
    outputs = greedy_decode(model, src, max(len(t) for t in texts) + 2, options=options)
    rows = src.cpu().tolist()
    return PaddingView(
        texts=list(texts),
        tokens=[tok.token_labels(r) for r in rows],
        is_pad=(src == PAD_ID).cpu().numpy(),
        attention=attention,
        outputs=[tok.decode(o) for o in outputs],
    )


def trace_of(ckpt: Checkpoint, text: str, options: InferenceOptions) -> GPTTrace | Seq2SeqTrace:
    """The cached trace the explorer page of this checkpoint's architecture shows."""
    if ckpt.config.arch == "gpt":
        return cached_call(gpt_view, ckpt, text, options).trace
    return cached_call(reversal_view, ckpt, text, options)


# ---------------------------------------------------------------- figures, cached like the numbers
# A rerun that leaves text and options alone (a click on a selector, a second visitor of the
# same link) reuses the built figure: the grid is the costliest thing a page sends.


KIND_LABELS = {
    "self": "self-attention (causal)",
    "cross": "cross-attention (output → input)",
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder self-attention",
}


def grid_figure(
    ckpt: Checkpoint,
    text: str,
    options: InferenceOptions,
    kind: str,
    selected: tuple[int, int],
    cell_titles: list[list[str]],
    cell_px: int,
    file: str,
) -> dict[str, Any]:
    """Every head of one attention kind as a map spec, clickable, the selected head outlined."""
    tr = trace_of(ckpt, text, options)
    queries, keys = tr.axes(kind)
    return charts.grid_spec(
        tr.attention[kind],
        queries,
        keys,
        title=f"Every head: {KIND_LABELS[kind]}, a layer per row",
        cell_titles=cell_titles,
        selected=selected,
        cell_px=cell_px,
        file=file,
    )


def head_figure(
    ckpt: Checkpoint,
    text: str,
    options: InferenceOptions,
    kind: str,
    layer: int,
    head: int,
    title: str,
    mark_future: bool,
    height: int,
    file: str,
) -> dict[str, Any]:
    """One head drawn large as a map spec; mark_future outlines keys after the query that get weight."""
    tr = trace_of(ckpt, text, options)
    queries, keys = tr.axes(kind)
    weights = tr.attention[kind][layer, head]
    return charts.head_spec(
        weights,
        queries,
        keys,
        title,
        height=height,
        highlight=future_cells(weights) if mark_future else None,
        file=file,
    )


# ---------------------------------------------------------------- widgets


def checkpoint_note(ckpt: Checkpoint) -> str:
    c = ckpt.config
    steps = ckpt.metrics.get("steps")
    return (
        f"positions **{c.positions}** · d_model {c.d_model} · {c.n_layers} layers × {c.n_heads} heads · "
        f"d_k = {c.d_head}" + (f" · trained for {steps} steps" if steps else "")
    )


def show_input_notes(checked: CheckedInput, *, what: str = "model") -> None:
    """Info lines for lowercasing and for characters the vocabulary lacks."""
    if checked.lowered:
        st.info(
            f"The {what} only knows lowercase letters, so your input was lowercased to "
            f"{md_code(visible(checked.text))}.",
            icon=":material/text_fields:",
        )
    if checked.unknown:
        names = ", ".join(char_name(c) for c in checked.unknown)
        st.warning(f"Not in the vocabulary, replaced by `<unk>`: {names}.", icon=":material/help:")


def clamp_state(key: str, options: list[Any], default: Any) -> None:
    """Keep a selector's state inside its options (a link or a checkpoint switch can ask for
    more than there is), saying so when a value had to go."""
    value = st.session_state.get(key)
    if value not in options:
        if value not in (None, ""):  # "": nothing chosen yet (a page's default), nothing to say
            name = key.split("_", 1)[-1]
            st.info(
                f"`{name}={state.shown(str(value))}` is not available for this model; showing {default}.",
                icon=":material/info:",
            )
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


def pick_head(prefix: str, layer: int, head: int) -> None:
    """Select a head clicked in a grid: the page's layer and head selectors follow it."""
    st.session_state[prefix + "layer"], st.session_state[prefix + "head"] = layer, head


def grid_columns() -> tuple[Any, Any]:
    """The (grid, large head) columns of grid_and_head, for a page that puts the layer and
    head selectors above the large head (so the grid starts higher on the screen)."""
    left, right = st.columns([1.15, 1], gap="medium")
    return left, right


def grid_and_head(
    name: str,
    text: str,
    options: InferenceOptions,
    kind: str,
    *,
    prefix: str,
    chart: str,
    layer: int,
    head: int,
    head_title: str,
    cell_titles: list[list[str]],
    mark_future: bool = False,
    columns: tuple[Any, Any] | None = None,
) -> None:
    """The whole (L, H) grid of `kind`, clickable, next to the selected head drawn large
    (in the given `grid_columns`, else in new ones).

    Sized for a 1280 x 720 projector: the grid column is about 440 px wide, so each head
    gets a roughly square cell of 440 / n_heads pixels.
    """
    L, H = len(cell_titles), len(cell_titles[0])
    cell_px = int(min(150, max(70, 440 / H)))
    height = max(330, min(520, cell_px * L + 60))
    if st.session_state.get(present.KEY):  # the grid and the large head fit on one projected screen
        cell_px = int(min(cell_px, max(50, (present.GRID_PX - 75) / L)))
        height = max(250, cell_px * L + 75 - (125 if columns else 0))  # less the selectors above it
    left, right = columns or grid_columns()
    page = prefix.rstrip("_")
    charts.show(
        run_cached(
            grid_figure,
            name,
            text,
            options,
            kind,
            (layer, head),
            cell_titles,
            cell_px,
            export.file_stem(page, name, kind, "all_heads"),
        ),
        key=f"{prefix}{chart}_grid",
        on_head=functools.partial(pick_head, prefix),
        where=left,
    )
    charts.show(
        run_cached(
            head_figure,
            name,
            text,
            options,
            kind,
            layer,
            head,
            head_title,
            mark_future,
            height,
            export.file_stem(page, name, kind, f"L{layer}H{head}"),
        ),
        key=f"{prefix}{chart}_head",
        where=right,
    )


def download_buttons(
    prefix: str, stem: str, checkpoint: str, trace: GPTTrace | Seq2SeqTrace, **extra: Any
) -> None:
    """JSON (the `trace --json` object plus `extra`) and long-form CSV, built on click;
    `stem` from export.file_stem."""
    row = st.container(horizontal=True)
    row.download_button(
        "Attention as JSON",
        data=lambda: export.trace_json_text(trace, checkpoint, **extra),
        file_name=f"{stem}.json",
        mime="application/json",
        on_click="ignore",
        icon=":material/download:",
        key=prefix + "json",
    )
    row.download_button(
        "Attention as CSV",
        data=lambda: export.attention_csv(trace),
        file_name=f"{stem}.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
        key=prefix + "csv",
    )
