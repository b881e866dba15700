"""The notebook widgets: `Chart`, one lab chart (anywidget, drawn by the pages' own chart code),
and `AttentionView`, the grid of every head linked to one head drawn large and the softmax walk
of one query, with a kind picker where a model has several (ipywidgets)."""

from __future__ import annotations

from html import escape as _escape
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets

from attention_lab.charts import offline, script
from attention_lab.notebook import charts
from attention_lab.notebook.attention import AttentionSet


class Chart(anywidget.AnyWidget):
    """One chart: `spec` from attention_lab.charts.specs; a click on a grid's head sets `head`
    to {"layer", "head", "at"}."""

    _esm = script.widget_module()
    _css = script.embed_css()
    spec = traitlets.Dict().tag(sync=True)
    head = traitlets.Dict().tag(sync=True)


class AttentionView(widgets.VBox):
    """Every head of one kind; a click on one (or `select`) draws it large and walks one of its
    queries step by step. `to_html(path)` keeps the view as one offline file."""

    def __init__(self, attention: AttentionSet, *, layer: int = 0, head: int = 0, query: int = -1) -> None:
        self.attention = attention
        self.kind = attention.kinds[0]
        self.selected = {k: (0, 0) for k in attention.kinds}
        self.step = 0
        self.kind_picker = widgets.ToggleButtons(
            options=[(charts.label(k), k) for k in attention.kinds], description="Attention:"
        )
        self.kind_picker.observe(lambda change: self.select(kind=change["new"]), names="value")
        self.grid, self.large, self.walk_chart = Chart(), Chart(), Chart()
        self.grid.observe(self._clicked, names="head")
        self.query = widgets.Dropdown(description="Query:")
        self.query.observe(lambda change: self._walk(0), names="value")
        self.prev = widgets.Button(description="◀ Previous step")
        self.next = widgets.Button(description="Next step ▶")
        self.prev.on_click(lambda _: self._walk(self.step - 1))
        self.next.on_click(lambda _: self._walk(self.step + 1))
        self.says = widgets.HTML()
        self.walk_box = widgets.VBox(
            [self.query, widgets.HBox([self.prev, self.next]), self.says, self.walk_chart]
        )
        title = widgets.HTML(f"<b>{_escape(attention.title)}</b>")
        shown = [title] + ([self.kind_picker] if len(attention.kinds) > 1 else [])
        super().__init__(shown + [self.grid, self.large, self.walk_box])
        self.select(layer=layer, head=head, query=query)

    def select(self, *, kind: str | None = None, layer: int | None = None, head: int | None = None,
             query: int | None = None) -> None:  # fmt: skip
        """Show head (layer, head) of `kind` (each defaults to what is shown now) and walk `query`
        (a token index; negative counts from the end)."""
        kind = kind or self.kind
        if kind not in self.attention.maps:
            raise ValueError(f"kind: one of {self.attention.kinds}, got {kind!r}")
        n_layers, n_heads = self.attention.shape(kind)
        now = self.selected[kind]
        layer, head = now[0] if layer is None else layer, now[1] if head is None else head
        if not (0 <= layer < n_layers and 0 <= head < n_heads):
            raise ValueError(f"{kind}: layer 0-{n_layers - 1} and head 0-{n_heads - 1}, got {layer}.{head}")
        self.kind, self.selected[kind] = kind, (layer, head)
        if self.kind_picker.value != kind:
            self.kind_picker.value = kind
        self.grid.spec = charts.grid(self.attention, kind, (layer, head))
        self.large.spec = charts.head(self.attention, kind, layer, head)
        queries = self.attention.axes[kind][0]
        options = [(f"{i}: {t!r}", i) for i, t in enumerate(queries)]
        at = self.query.value if query is None and self.query.options == tuple(options) else query
        at = len(queries) - 1 if at is None else at % len(queries)
        if self.query.options != tuple(options):
            self.query.options = options  # picks the first: walked again just below
        self.query.value = at
        self._walk(0)

    def _clicked(self, change: dict[str, Any]) -> None:
        picked = change["new"] or {}
        if "layer" in picked and "head" in picked:
            self.select(layer=int(picked["layer"]), head=int(picked["head"]))

    def _walk(self, step: int) -> None:
        layer, head = self.selected[self.kind]
        steps = charts.walk(self.attention, self.kind, layer, head, self.query.value or 0)
        self.walk_box.layout.display = "" if steps else "none"
        if not steps:
            return
        self.step = max(0, min(len(steps) - 1, step))
        caption, spec = steps[self.step]
        self.says.value = _escape(caption)
        self.walk_chart.spec = spec
        self.prev.disabled, self.next.disabled = self.step == 0, self.step == len(steps) - 1

    def scenes(self, budget: int = charts.HEADS_BUDGET) -> list[offline.Scene]:
        return charts.scenes(self.attention, self.selected, self.query.value or 0, budget)

    def to_html(self, path: str | Path) -> Path:
        """Write the view as one HTML file that opens offline (charts interactive); returns its path."""
        out = Path(path)
        out.write_text(offline.document(self.attention.title, self.scenes()), encoding="utf-8")
        return out

    def _repr_html_(self) -> str:
        return offline.fragment(self.scenes(charts.OUTPUT_BUDGET))

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The widget where widgets draw, and the offline HTML beside it for where they do not
        (a notebook converted by nbconvert, a viewer without a kernel)."""
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        return {**bundle, "text/html": self._repr_html_()}
