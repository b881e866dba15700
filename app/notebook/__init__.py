"""The lab in a notebook: `show(trace)`, `show(checkpoint, text)`, `show_transformer_lens(cache,
tokens)` and `show_attentions(attentions, tokens)` draw any model's attention with the lab's own
charts (a widget: the grid of heads, a clicked head large, the walk of one query), and
`to_html(what, path)` keeps a view as one HTML file that opens offline.

The widgets need the `notebook` extra (anywidget, ipywidgets); `to_html` does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from attention_lab.charts import offline
from attention_lab.notebook import charts
from attention_lab.notebook.attention import (
    AttentionSet,
    of_attentions,
    of_checkpoint,
    of_trace,
    of_transformer_lens,
)
from transformer_core import InferenceOptions
from transformer_core.interp import GPTTrace, Seq2SeqTrace
from transformer_core.io.checkpoint import Checkpoint

if TYPE_CHECKING:
    from attention_lab.notebook.widget import AttentionView

__all__ = [
    "AttentionSet",
    "attention_of",
    "show",
    "show_attentions",
    "show_transformer_lens",
    "to_html",
]


def attention_of(what: Any, text: str | None = None, options: InferenceOptions | None = None) -> AttentionSet:
    """What `show` draws: an AttentionSet as it is, a lab trace, or a checkpoint (name, run id,
    folder or loaded) with the text to trace."""
    if isinstance(what, AttentionSet):
        return what
    if isinstance(what, GPTTrace | Seq2SeqTrace):
        return of_trace(what)
    if isinstance(what, str | Path | Checkpoint):
        if text is None:
            raise TypeError("show(checkpoint, text): give the text to trace")
        return of_checkpoint(what, text, options)
    raise TypeError(
        f"show() takes a lab trace, or a checkpoint and a text; got {type(what).__name__}. "
        "For other models: show_transformer_lens(cache, tokens) or show_attentions(attentions, tokens)"
    )


def _view(attention: AttentionSet, **where: int) -> AttentionView:
    try:
        from attention_lab.notebook.widget import AttentionView
    except ImportError as err:  # the widgets' libraries are an extra
        raise ImportError(
            f"the notebook widgets need anywidget and ipywidgets ({err}): "
            "pip install 'attention-lab[notebook]'; to_html() works without them"
        ) from err
    return AttentionView(attention, **where)


def show(
    what: Any, text: str | None = None, *, options: InferenceOptions | None = None, **where: int
) -> AttentionView:
    """The widget for a lab trace, or for a checkpoint and a text (traced with `options`);
    where: layer, head, query to open first."""
    return _view(attention_of(what, text, options), **where)


def show_transformer_lens(cache: Any, tokens: Any, *, batch: int = 0, **where: int) -> AttentionView:
    """A TransformerLens ActivationCache's attention patterns; tokens: its str tokens
    (model.to_str_tokens(...))."""
    return _view(of_transformer_lens(cache, tokens, batch=batch), **where)


def show_attentions(
    attentions: Any, tokens: Any, *, batch: int = 0, kind: str = "self", **where: int
) -> AttentionView:
    """The attentions a Hugging Face model returns with output_attentions=True; tokens: one
    list, or (query tokens, key tokens) for cross-attention."""
    return _view(of_attentions(attentions, tokens, batch=batch, kind=kind), **where)


def to_html(what: Any, path: str | Path, text: str | None = None, *, query: int = -1) -> Path:
    """Write a view (an AttentionView, an AttentionSet, a trace, or a checkpoint and text) as one
    HTML file that opens offline; returns its path."""
    if hasattr(what, "to_html"):
        return what.to_html(path)
    attention = attention_of(what, text)
    selected = {k: (0, 0) for k in attention.kinds}
    scenes = charts.scenes(attention, selected, query % len(attention.axes[attention.kinds[0]][0]))
    out = Path(path)
    out.write_text(offline.document(attention.title, scenes), encoding="utf-8")
    return out
