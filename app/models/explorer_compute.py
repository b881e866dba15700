"""The explorers' computations on a checkpoint through the transformer_core API.

Module-level pure functions of (checkpoint, args), run through attention_lab.models.compute
(run_cached, or inside a page's view: attention_lab.viewmodel): cached by the weights'
checksum, the device and the arguments (InferenceOptions as is). No Streamlit here, so tests
call them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from transformer_core import AttentionCapture, InferenceOptions, filter_logits, generate, greedy_decode
from transformer_core.attention import KVCache
from transformer_core.interp import GPTTrace, Seq2SeqTrace, record_arrays, trace_gpt, trace_seq2seq
from transformer_core.interp.attribution import row_shares, weighted_attention
from transformer_core.interp.decompose import Explained, explain
from transformer_core.interp.geometry import Geometry, qk_geometry
from transformer_core.interp.profiles import HeadProfiles, head_profiles
from transformer_core.interp.report import probe_set_of, report_detectors
from transformer_core.interp.trace import trace_gpt_ids
from transformer_core.io import PAD_ID, CharTokenizer, Checkpoint, encode_source
from transformer_core.io.held_out import held_out_data, imported_windows


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
    """One sampled character with what the sampler weighed, for the shaded continuation."""

    label: str  # readable token (space as ␣)
    text: str  # the character (or, BPE, the text piece) itself
    token: int  # its id: what was sampled is traced as sampled, never re-tokenized
    prob: float
    top: list[tuple[str, float]]


@dataclass(frozen=True)
class PaddingView:
    """A PAD-padded batch of two inputs: what the padding mask keeps out of attention."""

    texts: list[str]
    tokens: list[list[str]]  # per row, PAD shown as <pad>
    is_pad: np.ndarray  # (B, Ts) bool
    attention: np.ndarray  # (B, L, H, Ts, Ts) encoder self-attention
    outputs: list[str]


def top_tokens(probs: np.ndarray, tokenizer: CharTokenizer, k: int = 8) -> list[tuple[int, str, float]]:
    """The k likeliest (id, label, probability), likeliest first."""
    order = np.argsort(-probs)[:k]
    labels = tokenizer.token_labels([int(i) for i in order])
    return [(int(i), lab, float(probs[i])) for i, lab in zip(order, labels, strict=True)]


def sampled_distribution(next_probs: np.ndarray, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """The distribution (V,) the sampler actually draws from after the prompt: the model's
    probabilities through the sampler's own temperature / top-k / top-p filter, so the chart
    can never drift from what `generate` does (log-probabilities are logits up to a constant)."""
    logits = torch.log(torch.as_tensor(next_probs, dtype=torch.float64).clamp_min(0))
    return filter_logits(logits, temperature, top_k or None, top_p if top_p < 1 else None).numpy()


def lesson_head(ckpt: Checkpoint) -> tuple[int, int]:
    """A GPT's most telling head, (layer, head): its strongest previous-token or induction head
    on the detectors' probe set (the scores /heads shows)."""
    scores = report_detectors(ckpt).scores["self"]
    best = np.fmax(
        np.nan_to_num(scores["previous_token"], nan=-1.0), np.nan_to_num(scores["induction"], nan=-1.0)
    )
    layer, head = np.unravel_index(int(np.argmax(best)), best.shape)
    return int(layer), int(head)


def gpt_view(
    ckpt: Checkpoint, text: str, options: InferenceOptions, ids: tuple[int, ...] | None = None
) -> GPTView:
    """Every self-attention head of a GPT on `text`, plus the per-layer arrays of the query walk.
    ids: the tokens `text` shows where they are not its own encoding (a BPE prompt + sample)."""
    if ids is None:
        tr = trace_gpt(ckpt.model, ckpt.tokenizer, text, options)
    else:
        tr = trace_gpt_ids(ckpt.model, ckpt.tokenizer, list(ids), text, [], options)
    return _view(tr)


def _view(tr: GPTTrace) -> GPTView:
    layers = sorted((r for r in tr.capture.records if r.kind == "self"), key=lambda r: r.layer)
    return GPTView(replace(tr, capture=AttentionCapture()), [record_arrays(r) for r in layers])


def output_projection(ckpt: Checkpoint, layer: int) -> tuple[np.ndarray, np.ndarray | None]:
    """W_O (d_model, H·d_head) and b_O of a GPT's layer, as numpy (/gpt's heads merged)."""
    proj = ckpt.model.blocks[layer].self_attn.out_proj
    bias = None if proj.bias is None else proj.bias.detach().float().cpu().numpy()
    return proj.weight.detach().float().cpu().numpy(), bias


@torch.inference_mode()
def step_probs(
    ckpt: Checkpoint, text: str, options: InferenceOptions, ids: tuple[int, ...] | None = None
) -> np.ndarray:
    """(T, V): the model's next-token probabilities after every position of `text` (or of
    `ids`, see gpt_view; row i: what it expected at position i + 1), one causal pass."""
    tokens = list(ids) if ids is not None else ckpt.tokenizer.encode(text)
    batch = torch.tensor([tokens], device=next(ckpt.model.parameters()).device)
    return torch.softmax(ckpt.model(batch, options=options)[0].float(), dim=-1).cpu().numpy()


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
    """What the GPT writes after `text`, seeded, with each step's alternatives."""
    return _sample(ckpt, ckpt.tokenizer.encode(text), max_new, temperature, top_k, top_p, seed, options)


def view_and_sample(
    ckpt: Checkpoint,
    text: str,
    max_new: int,
    temperature: float,
    top_k: int,
    top_p: float,
    seed: int,
    options: InferenceOptions,
) -> tuple[GPTView, list[Sample]]:
    """gpt_view(text) and sample(text, ...) from one forward pass of the prompt: the traced pass
    keeps its keys and values, and sampling goes on from them (for GPT-2 small on CPU that pass
    is ~0.12 s, which the page would otherwise pay twice)."""
    model, tok = ckpt.model, ckpt.tokenizer
    encoded = tok.encode_checked(text, max_chars=model.config.max_len)
    cache = model.new_cache()
    tr = trace_gpt_ids(model, tok, encoded.ids, text, encoded.unknown, options, cache=cache)
    if len(encoded.ids) < 2:  # nothing to keep: sampling starts from scratch
        cache = None
    else:
        cache.keep(len(encoded.ids) - 1)  # the last prompt token is fed again: its logits start the sample
    samples = _sample(ckpt, encoded.ids, max_new, temperature, top_k, top_p, seed, options, cache)
    return _view(tr), samples


def _sample(
    ckpt: Checkpoint,
    prompt_ids: list[int],
    max_new: int,
    temperature: float,
    top_k: int,
    top_p: float,
    seed: int,
    options: InferenceOptions,
    cache: KVCache | None = None,
) -> list[Sample]:
    tok = ckpt.tokenizer
    steps = generate(
        ckpt.model,
        prompt_ids,
        max_new,
        temperature=temperature,
        top_k=top_k or None,
        top_p=top_p if top_p < 1 else None,
        seed=seed,
        options=options,
        never_sampled=tok.never_sampled,  # e.g. <pad> of our models, the padding ids of nanoGPT's BPE
        stop_id=tok.stop_id,
        cache=cache,
    )
    return [
        Sample(
            label=tok.token_labels([s.token])[0],
            text=tok.decode([s.token], skip_special=False),
            token=s.token,
            prob=s.prob,
            top=[(tok.token_labels([i])[0], p) for i, p in s.top],
        )
        for s in steps
    ]


def reversal_view(
    ckpt: Checkpoint, text: str, options: InferenceOptions, output_ids: tuple[int, ...] | None = None
) -> Seq2SeqTrace:
    """The greedy output (or output_ids: a beam search's or a sample's, EOS left out) and every
    head's attention over it (the capture dropped: the page needs none)."""
    written = None if output_ids is None else list(output_ids)
    tr = trace_seq2seq(
        ckpt.model, ckpt.tokenizer, text, options, max_new_tokens=len(text) + 2, output_ids=written
    )
    return replace(tr, capture=AttentionCapture())


def probe_sent(ckpt: Checkpoint, text: str) -> np.ndarray:
    """A GPT's value-weighted self-attention on one text (/heads' patterns with the switch on):
    (L, H, T, T), each key's share of ||alpha v W_O|| in its row."""
    tr = trace_gpt(ckpt.model, ckpt.tokenizer, text)
    return row_shares(weighted_attention(ckpt.model, tr.capture)["self"])


def reversal_sent(
    ckpt: Checkpoint, text: str, options: InferenceOptions, output_ids: tuple[int, ...] | None = None
) -> dict[str, np.ndarray]:
    """reversal_view's maps value-weighted: per kind (L, H, Tq, Tk), each key's share of
    ||alpha v W_O|| in its row (what /reversal's switch draws)."""
    written = None if output_ids is None else list(output_ids)
    tr = trace_seq2seq(
        ckpt.model, ckpt.tokenizer, text, options, max_new_tokens=len(text) + 2, output_ids=written
    )
    return {kind: row_shares(w) for kind, w in weighted_attention(ckpt.model, tr.capture).items()}


@torch.inference_mode()
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


def score_parts(ckpt: Checkpoint, text: str, kind: str, layer: int, head: int, query: int) -> Explained:
    """One query row of a head's scores split into the residual stream's parts (/heads 9)."""
    return explain(ckpt, text, kind, layer, head, query)


GEOMETRY_TEXTS, GEOMETRY_CHARS = 16, 64  # held-out windows the geometry reads, and their length


def head_geometry(ckpt: Checkpoint, layer: int, head: int, rotated: bool) -> tuple[Geometry, str]:
    """A GPT head's queries and keys over GEOMETRY_TEXTS held-out windows of its own data (the
    built-in probe texts where the checkpoint records none here), and what was read."""
    held = held_out_data(ckpt) or imported_windows(ckpt, GEOMETRY_TEXTS, GEOMETRY_CHARS)
    if held is None:
        texts, read = list(probe_set_of(ckpt, None).texts), "the built-in probe texts"
    else:
        texts = [ckpt.tokenizer.decode(list(s[:GEOMETRY_CHARS])) for s in held.sequences[:GEOMETRY_TEXTS]]
        read = f"the first {GEOMETRY_CHARS} tokens of {held.description}"
    return qk_geometry(ckpt.model, ckpt.tokenizer, texts, layer, head, rotated=rotated), read


def dataset_profiles(ckpt: Checkpoint) -> HeadProfiles:
    """Every head's scores over many held-out windows and its top pairs (/heads 11): the file kept
    beside the checkpoint for these weights, else computed now (a few seconds)."""
    return head_profiles(ckpt)


def marked_pair(tokens: list[str], query: int, key: int, around: int = 8) -> str:
    """The window's text around a (query, key) pair, the key as [k] and the query as {q}."""
    start, end = max(0, min(query, key) - around), min(len(tokens), max(query, key) + 3)
    marks = {key: "[{}]", query: "{{{}}}"} if key != query else {key: "[{{{}}}]"}  # a query on itself: both
    shown = [marks[i].format(t) if i in marks else t for i, t in enumerate(tokens)]
    return ("…" if start else "") + "".join(shown[start:end]) + ("…" if end < len(tokens) else "")
