"""Streamlit's side of the charts: our canvas charts (app/static/charts.js and its modules in
app/static/charts/, `attention_lab.charts.script`) mounted as a Streamlit v2 component, no
iframe (`show`), and the trace download buttons under them.

Where the server serves app/static, a 0.4 kB loader imports the modules once per browser page
(preloaded all at once, their URL versioned by a hash of them all); where it does not, every
module is bundled into one script. `attention_lab.charts.specs` builds the specs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

import streamlit as st

from attention_lab.charts import script as chart_script
from attention_lab.charts.export import attention_csv, trace_json_text
from attention_lab.charts.specs import TOOLS_PX
from transformer_core.interp import GPTTrace, Seq2SeqTrace

LOADER = """
let loaded = null;  // the drawing module, once fetched: later charts draw without waiting
function fetchCharts() {
  // charts.js, its modules asked for all at once (imports alone find them level by level)
  for (const path of %s) {
    const link = Object.assign(document.createElement("link"), { rel: "modulepreload", href: path });
    document.head.appendChild(link);
  }
  return import(new URL(%r, window.location.origin).href);
}
export default function (component) {
  if (loaded) return loaded.default(component);
  let cleanup = null, gone = false;
  (window.__attentionLabCharts ||= fetchCharts()).then(
    (m) => {
      loaded = m;
      if (!gone) cleanup = m.default(component);
    },
    (err) => {  // say so on the page instead of an empty space
      window.__attentionLabCharts = null;  // the next chart tries again
      const note = document.createElement("div");
      note.style.cssText = "padding:8px;border:1px solid #f5a3a3;border-radius:4px;color:#7d1a1a";
      note.textContent = "This chart could not be drawn: its script (app/static/charts.js) " +
        `did not load (${err}). Reload the page.`;
      component.parentElement.replaceChildren(note);
    }
  );
  return () => { gone = true; if (cleanup) cleanup(); };
}
"""


def static_url(name: str) -> str | None:
    """The URL the server serves app/static/`name` at, or None where it serves no static files."""
    if not st.get_option("server.enableStaticServing"):
        return None
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return f"/{base}/app/static/{name}" if base else f"/app/static/{name}"


def script() -> str:
    """The component's JS. Where the server serves app/static (server.enableStaticServing,
    set in .streamlit/config.toml) a 0.4 kB loader that imports charts.js, and with it its
    modules, once per browser page; else all of them bundled into one script, which Streamlit
    would then send with every chart of every run (45 kB each)."""
    entry = static_url("charts.js")
    if entry is None:
        return chart_script.bundled()
    module_urls = json.dumps(
        [static_url(m.relative_to(chart_script.STATIC).as_posix()) for m in chart_script.modules()]
    )
    return LOADER % (module_urls, f"{entry}?v={chart_script.version()}")  # a changed module: a new URL


_CHART = st.components.v2.component("attention_lab.chart", js=script(), css=chart_script.css())


def spec_bytes(spec: dict[str, Any]) -> bytes:
    """The spec as the page sends it: UTF-8 JSON. Why bytes: Streamlit passes them on as they
    are, where a dict it scans for dataframes and encodes twice (once key-sorted, to hash it)."""
    return json.dumps(spec).encode()


def show(
    spec: dict[str, Any],
    *,
    key: str,
    on_head: Callable[[int, int], None] | None = None,
    on_cell: Callable[[int, int], None] | None = None,
    where: Any = None,
) -> None:
    """Mount a chart (in `where`, a container or column, else the page); on_head(layer, head)
    runs before the rerun a click on a grid's head starts, on_cell(query, key) before the one a
    click on a cell of a map whose spec says `"clickable": "cell"` starts."""

    def picked(trigger: str, names: tuple[str, str], then: Callable[[int, int], None] | None) -> None:
        value = (st.session_state.get(key) or {}).get(trigger) or {}
        try:
            a, b = int(value[names[0]]), int(value[names[1]])
        except (KeyError, TypeError, ValueError):
            return  # not such a click: nothing to select
        if then is not None:
            then(a, b)

    with where if where is not None else contextlib.nullcontext():
        _CHART(
            key=key,
            data=spec_bytes(spec),
            height=spec["height"] + TOOLS_PX,
            on_head_change=lambda: picked("head", ("layer", "head"), on_head),
            on_cell_change=lambda: picked("cell", ("query", "key"), on_cell),
        )


def download_buttons(
    prefix: str, stem: str, checkpoint: str, trace: GPTTrace | Seq2SeqTrace, **extra: object
) -> None:
    """JSON (the `trace --json` object plus `extra`) and long-form CSV, built only on click;
    `stem` from export.file_stem."""
    row = st.container(horizontal=True)
    row.download_button(
        "Attention as JSON",
        data=lambda: trace_json_text(trace, checkpoint, **extra),
        file_name=f"{stem}.json",
        mime="application/json",
        on_click="ignore",
        icon=":material/download:",
        key=prefix + "json",
    )
    row.download_button(
        "Attention as CSV",
        data=lambda: attention_csv(trace),
        file_name=f"{stem}.csv",
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
        key=prefix + "csv",
    )
