"""The charts' code in the browser, as text (no Streamlit): app/static/charts.js, the entry
module that mounts one chart, its modules in app/static/charts/ and app/static/streamlit_dom.js
(Streamlit's DOM hooks), and charts.css.

The pages load it as a Streamlit component (`attention_lab.charts.component`); the notebook
widget and the offline HTML files (`attention_lab.notebook`) inline `bundled()`, so every place
draws a spec with the same code.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

STATIC = Path(__file__).resolve().parents[1] / "static"  # served at /app/static/
SCRIPT = STATIC / "charts.js"  # the entry module; it imports charts/*.js and streamlit_dom.js
DOM = "streamlit_dom.js"  # Streamlit's DOM hooks, in STATIC (attention_lab.frame.streamlit_dom)
CSS = STATIC / "charts.css"

#: the modules' two forms of import: `import * as name from "./x.js";`, `import { a, b } from "./x.js";`
_IMPORT = re.compile(r'^import (?:\* as (\w+)|\{([^}]*)\}) from "(\.[^"]+)";\n', re.MULTILINE)
_EXPORT = re.compile(r"^export (?:async function|function|const) (\w+)", re.MULTILINE)


def modules() -> list[Path]:
    """charts.js's modules, in a fixed order."""
    return [*sorted((STATIC / "charts").glob("*.js")), STATIC / DOM]


def version(entry: str = "charts.js") -> str:
    """12 hex digits of a hash of an entry module (charts.js) and every module it may import: a
    changed module, a new version."""
    files = [STATIC / entry, *modules()]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:12]


def bundled(entry: str = "charts.js") -> str:
    """An entry module in STATIC (charts.js) and every module it imports as one module script: each
    imported module's code in a function scope that returns its exports, each import a read of
    those; the entry keeps its `export default function (component)`."""
    parts: list[str] = []
    names: dict[Path, str] = {}  # module -> the constant holding its exports in the bundle

    def add(path: Path) -> str:
        if path not in names:
            text = path.read_text(encoding="utf-8")
            body = _IMPORT.sub(lambda m: _read_import(m, add((path.parent / m[3]).resolve())), text)
            if path == STATIC / entry:
                parts.append(body)
            else:
                code = re.sub(r"^export ", "", body, flags=re.MULTILINE)
                exports = ", ".join(_EXPORT.findall(text))
                parts.append(f"const charts_{path.stem} = (() => {{\n{code}return {{ {exports} }};\n}})();\n")
            names[path] = f"charts_{path.stem}"
        return names[path]

    add(STATIC / entry)
    return "\n".join(parts)


def _read_import(m: re.Match[str], module: str) -> str:
    """An import statement in the bundle: the imported names read from `module`'s exports."""
    return f"const {m[1]} = {module};\n" if m[1] else f"const {{{m[2]}}} = {module};\n"


def css() -> str:
    """The charts' stylesheet."""
    return CSS.read_text(encoding="utf-8")


def drawing_code() -> str:
    """The bundle as plain module code that defines `drawChart(component)` instead of exporting
    it: what the notebook widget and the offline files put their own few lines after."""
    code = bundled()
    head = "export default function (component) {"
    assert code.count(head) == 1, "charts.js must export one default function (component)"
    return code.replace(head, "function drawChart(component) {")


def widget_module() -> str:
    """The notebook widget's ES module (anywidget's _esm): the drawing code and its render()."""
    return drawing_code() + "\n" + (STATIC / "widget.js").read_text(encoding="utf-8")


def offline_script() -> str:
    """An offline file's module script: the drawing code and startOffline(root)."""
    return drawing_code() + "\n" + (STATIC / "offline.js").read_text(encoding="utf-8")


def embed_css() -> str:
    """The charts' stylesheet and the theme colours outside Streamlit."""
    return css() + "\n" + (STATIC / "embed.css").read_text(encoding="utf-8")
