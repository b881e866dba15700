"""The chart component's code in the browser: our canvas charts (app/static/charts.js and
its modules in app/static/charts/) mounted as a Streamlit v2 component, no iframe.

Where the server serves app/static, a 0.4 kB loader imports the modules once per browser page
(preloaded all at once, their URL versioned by a hash of them all); where it does not, every
module is bundled into one script. `attention_lab.charts.specs` builds the specs and mounts charts with it.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import streamlit as st

STATIC = Path(__file__).resolve().parents[1] / "static"  # served at /app/static/
SCRIPT = STATIC / "charts.js"  # the entry module; it imports charts/*.js
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


def script() -> str:
    """The component's JS. Where the server serves app/static (server.enableStaticServing,
    set in .streamlit/config.toml) a 0.4 kB loader that imports charts.js, and with it its
    modules, once per browser page; else all of them bundled into one script, which Streamlit
    would then send with every chart of every run (45 kB each)."""
    if not st.get_option("server.enableStaticServing"):
        return bundled()
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    url = f"/{base}/app/static/" if base else "/app/static/"
    modules = sorted((STATIC / "charts").glob("*.js"))
    version = hashlib.sha256(b"".join(f.read_bytes() for f in [SCRIPT, *modules])).hexdigest()[:12]
    module_urls = json.dumps([f"{url}charts/{m.name}" for m in modules])
    return LOADER % (module_urls, f"{url}charts.js?v={version}")  # a changed module: a new URL for charts.js


#: the modules' two forms of import: `import * as name from "./x.js";`, `import { a, b } from "./x.js";`
_IMPORT = re.compile(r'^import (?:\* as (\w+)|\{([^}]*)\}) from "(\.[^"]+)";\n', re.MULTILINE)
_EXPORT = re.compile(r"^export (?:async function|function|const) (\w+)", re.MULTILINE)


def bundled() -> str:
    """charts.js and every module it imports as one module script: each imported module's
    code in a function scope that returns its exports, each import a read of those."""
    parts: list[str] = []
    names: dict[Path, str] = {}  # module -> the constant holding its exports in the bundle

    def add(path: Path) -> str:
        if path not in names:
            text = path.read_text(encoding="utf-8")
            body = _IMPORT.sub(lambda m: _read_import(m, add((path.parent / m[3]).resolve())), text)
            if path == SCRIPT:
                parts.append(body)  # the entry keeps its `export default`
            else:
                code = re.sub(r"^export ", "", body, flags=re.MULTILINE)
                exports = ", ".join(_EXPORT.findall(text))
                parts.append(f"const charts_{path.stem} = (() => {{\n{code}return {{ {exports} }};\n}})();\n")
            names[path] = f"charts_{path.stem}"
        return names[path]

    add(SCRIPT)
    return "\n".join(parts)


def _read_import(m: re.Match[str], module: str) -> str:
    """An import statement in the bundle: the imported names read from `module`'s exports."""
    return f"const {m[1]} = {module};\n" if m[1] else f"const {{{m[2]}}} = {module};\n"


component = st.components.v2.component(
    "attention_lab.chart",
    js=script(),
    css=(STATIC / "charts.css").read_text(encoding="utf-8"),
)
