"""What a notebook view shows, from any source: per attention kind, (L, H, Tq, Tk) weights and
their token labels, and (from a lab trace) each layer's captured q, k, v for the softmax walk.

`of_trace` reads a lab trace, `of_checkpoint` traces a checkpoint, `of_transformer_lens` reads a
TransformerLens `ActivationCache`'s patterns and `of_attentions` the tuple of tensors a Hugging
Face model returns with `output_attentions=True`, so any model's attention draws with the lab's
charts. Pure numpy once built: nothing here touches a widget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from transformer_core import GPT, InferenceOptions
from transformer_core.interp import GPTTrace, Seq2SeqTrace, trace_gpt, trace_seq2seq
from transformer_core.interp.fill import fill_masks, mark_masks
from transformer_core.interp.inspection import record_arrays
from transformer_core.io.checkpoint import Checkpoint, load_checkpoint
from transformer_core.io.tokenizers import BPE_LABELS
from transformer_core.models import BERT

#: the most tokens a view draws along one axis: a head's map of 512 x 512 cells is already 1 MB
MAX_TOKENS = 512


@dataclass(frozen=True)
class AttentionSet:
    """Attention to draw. maps[kind]: (L, H, Tq, Tk) weights; axes[kind]: (query tokens, key
    tokens); records[kind][layer]: the captured arrays of that layer (q, k, v, scores, mask,
    bias, scale), present for lab traces only (the walk needs them); scheme: the positional
    scheme, named in the walk's bias step."""

    title: str
    maps: dict[str, np.ndarray]
    axes: dict[str, tuple[list[str], list[str]]]
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    scheme: str = ""

    def __post_init__(self) -> None:
        if not self.maps:
            raise ValueError(f"{self.title}: no attention to show (a model without attention reads none)")
        for kind, w in self.maps.items():
            queries, keys = self.axes[kind]
            if w.ndim != 4 or w.shape[2:] != (len(queries), len(keys)):
                raise ValueError(
                    f"{kind} attention of shape {tuple(w.shape)} does not match "
                    f"{len(queries)} query and {len(keys)} key tokens: expected (layers, heads, "
                    f"{len(queries)}, {len(keys)})"
                )
            if max(len(queries), len(keys)) > MAX_TOKENS:
                raise ValueError(
                    f"{kind}: {max(len(queries), len(keys))} tokens; a view draws at most {MAX_TOKENS}"
                )
            if not np.isfinite(w).all():
                raise ValueError(f"{kind} attention holds NaN or infinite weights")

    @property
    def kinds(self) -> list[str]:
        return list(self.maps)

    def shape(self, kind: str) -> tuple[int, int]:
        """(layers, heads) of `kind`."""
        n_layers, n_heads = self.maps[kind].shape[:2]
        return int(n_layers), int(n_heads)


def of_trace(trace: GPTTrace | Seq2SeqTrace, title: str = "", scheme: str = "") -> AttentionSet:
    """A lab trace (`transformer_core.interp.trace_gpt`/`trace_seq2seq`, or the app's)."""
    kinds = [k for k, w in trace.attention.items() if w.size]
    records: dict[str, list[dict[str, Any]]] = {}
    for kind in kinds:
        layers = sorted((r for r in trace.capture.records if r.kind == kind), key=lambda r: r.layer)
        records[kind] = [record_arrays(r) for r in layers]
    return AttentionSet(
        title=title or f"{trace.text!r} → {trace.output!r}",
        maps={k: np.asarray(trace.attention[k], dtype=np.float32) for k in kinds},
        axes={k: trace.axes(k) for k in kinds},
        records=records,
        scheme=scheme,
    )


def of_checkpoint(
    checkpoint: str | Path | Checkpoint, text: str, options: InferenceOptions | None = None
) -> AttentionSet:
    """Trace `text` with a checkpoint (a shipped name, a run id, a folder or a loaded one)."""
    ckpt = checkpoint if isinstance(checkpoint, Checkpoint) else load_checkpoint(checkpoint)
    options = options or InferenceOptions()
    if isinstance(ckpt.model, BERT):  # [MASK] marks a hidden character, as `trace` reads it
        filled = fill_masks(ckpt.model, ckpt.tokenizer, mark_masks(text), options)
        trace: GPTTrace | Seq2SeqTrace = filled.trace
    elif isinstance(ckpt.model, GPT):
        trace = trace_gpt(ckpt.model, ckpt.tokenizer, text, options)
    else:
        trace = trace_seq2seq(ckpt.model, ckpt.tokenizer, text, options)
    return of_trace(trace, f"{ckpt.name}: {trace.text!r} → {trace.output!r}", ckpt.config.positions)


def _numpy(tensor: Any) -> np.ndarray:
    """A torch tensor (any device, any float dtype) or an array as float32 numpy."""
    if hasattr(tensor, "detach"):
        tensor = tensor.detach().float().cpu().numpy()
    return np.asarray(tensor, dtype=np.float32)


def _labels(tokens: Any) -> list[str]:
    """Tokens as the lab labels them: a space as ␣, a newline as ↵, control characters visible."""
    return [str(t).translate(BPE_LABELS) for t in tokens]


def _token_axes(tokens: Any) -> tuple[list[str], list[str]]:
    """tokens: one list (self-attention) or (query tokens, key tokens) (cross-attention)."""
    if isinstance(tokens, tuple) and len(tokens) == 2 and not isinstance(tokens[0], str):
        return _labels(tokens[0]), _labels(tokens[1])
    return _labels(tokens), _labels(tokens)


def _batch_row(w: np.ndarray, batch: int, what: str) -> np.ndarray:
    """(B, H, Tq, Tk) -> row `batch` (H, Tq, Tk); a (H, Tq, Tk) map (no batch) as it is."""
    if w.ndim == 4:
        if not 0 <= batch < w.shape[0]:
            raise ValueError(f"{what}: batch index {batch} outside a batch of {w.shape[0]}")
        return w[batch]
    if w.ndim == 3:
        return w
    raise ValueError(f"{what}: expected (batch, heads, queries, keys) weights, got shape {w.shape}")


def of_transformer_lens(cache: Any, tokens: Any, *, batch: int = 0, title: str = "") -> AttentionSet:
    """A TransformerLens ActivationCache: every `blocks.{l}.attn.hook_pattern` (L layers of
    (batch, H, T, T), or (H, T, T) when run with remove_batch_dim) as self-attention."""
    layers = []
    names = set(cache.keys())
    while f"blocks.{len(layers)}.attn.hook_pattern" in names:
        pattern = _numpy(cache[f"blocks.{len(layers)}.attn.hook_pattern"])
        layers.append(_batch_row(pattern, batch, f"layer {len(layers)}'s pattern"))
    if not layers:
        raise ValueError("this ActivationCache holds no attention pattern (blocks.0.attn.hook_pattern)")
    maps = {"self": np.stack(layers)}  # L x (H, T, T) -> (L, H, T, T)
    return AttentionSet(title or "TransformerLens cache", maps, {"self": _token_axes(tokens)})


def of_attentions(
    attentions: Any, tokens: Any, *, batch: int = 0, kind: str = "self", title: str = ""
) -> AttentionSet:
    """The tuple a Hugging Face model returns with output_attentions=True: one (batch, H, Tq,
    Tk) tensor per layer (as BertViz takes it); kind: "self", or "cross" with tokens given as
    (query tokens, key tokens)."""
    if kind not in ("self", "cross", "encoder_self", "decoder_self"):
        raise ValueError(f"kind: one of self, cross, encoder_self, decoder_self; got {kind!r}")
    if attentions is None or len(attentions) == 0:
        raise ValueError("no attention tensors: run the model with output_attentions=True")
    layers = [_batch_row(_numpy(a), batch, f"layer {i}") for i, a in enumerate(attentions)]
    maps = {kind: np.stack(layers)}  # L x (H, Tq, Tk) -> (L, H, Tq, Tk)
    return AttentionSet(title or "Hugging Face attentions", maps, {kind: _token_axes(tokens)})
