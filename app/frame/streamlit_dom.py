"""Streamlit's page as the lab finds it: the DOM hooks (`data-testid` and the like) of the
elements the lab's stylesheets, tours, benchmarks and tests reach for, each by a name of ours.

Why one home: Streamlit does not promise these hooks, so an upgrade that renames one must be
mended in one table. The table is app/static/streamlit_dom.js, which the lab's scripts import;
this module reads the same table for Python, and `streamlit_private` is its other half (the
server's internals). tests/app/test_streamlit_dom.py checks that no other file names a hook
and `missing()` that every hook is in the installed Streamlit's frontend (so does
benchmarks/streamlit_upgrade_check.py, for a Streamlit not yet installed).
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from types import MappingProxyType

TABLE = Path(__file__).resolve().parents[1] / "static" / "streamlit_dom.js"
_TABLE = re.compile(r"^export const PARTS = (\{.*?^\});$", re.MULTILINE | re.DOTALL)
# a selector's tests of Streamlit's attributes: (attribute, operator, value)
_ATTRIBUTE = re.compile(r"\[(data-[a-z-]+)(\^?=)?(?:'([^']*)')?\]")
_USED = re.compile(r"""(?<![\w.$])part\(["'](\w+)["']\)""")  # a read of the table in a script
_KEYED = re.compile(r"""(?<![\w.$])keyed\(["']([\w-]+)["']\)""")  # a keyed element named in a script
_KEYED_JS = re.compile(r"^export (function keyed\(.*?^\})$", re.MULTILINE | re.DOTALL)
KEY_CLASS = "st-key-"  # the class Streamlit gives the element of a widget or container with a key


def _read() -> MappingProxyType[str, str]:
    """name -> CSS selector, as app/static/streamlit_dom.js has it."""
    found = _TABLE.search(TABLE.read_text(encoding="utf-8"))
    if found is None:
        raise RuntimeError(f"{TABLE} has no `export const PARTS = {{...}};` table")
    try:
        return MappingProxyType(json.loads(found[1]))
    except json.JSONDecodeError as error:
        raise RuntimeError(f"{TABLE}: PARTS must stay plain JSON (Python reads it too): {error}") from None


PARTS = _read()


def part(name: str) -> str:
    """The CSS selector of Streamlit's element `name` ('main' -> "[data-testid='stMain']");
    an unknown name raises KeyError (a typo must not select nothing)."""
    return PARTS[name]


def keyed(key: str) -> str:
    """The CSS selector of the element a widget or container with `key` is drawn in ('tour_bar' ->
    '.st-key-tour_bar'): Streamlit's class for it, the key trimmed and each character outside
    [A-Za-z0-9_-] made a hyphen, as the script's `keyed` has it."""
    return "." + KEY_CLASS + re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())


def fill(template: str, **keys: str) -> str:
    """A stylesheet with `$name` for each of Streamlit's elements it styles, the selectors put in,
    and `$name` for each `name=key` given, that keyed element's selector (string.Template: CSS's own
    braces need no escaping; an unknown name raises KeyError)."""
    return string.Template(template).substitute(PARTS, **{name: keyed(key) for name, key in keys.items()})


def inline(script: str) -> str:
    """A script sent or evaluated as text, which cannot import app/static/streamlit_dom.js: each
    `part("name")` in it replaced by that selector as a JS string (an unknown name raises KeyError),
    each `keyed("key")` replaced by its selector, and the table's `keyed` defined first where the
    script calls it on a value of its own (so a script that must stay one expression names its keys)."""
    script = _USED.sub(lambda m: json.dumps(PARTS[m[1]]), script)
    script = _KEYED.sub(lambda m: json.dumps(keyed(m[1])), script)
    if re.search(r"(?<![\w.$])keyed\(", script):
        found = _KEYED_JS.search(TABLE.read_text(encoding="utf-8"))
        if found is None:
            raise RuntimeError(f"{TABLE} has no `export function keyed(key) {{...}}`")
        script = found[1] + "\n" + script
    return script


def missing() -> list[str]:
    """The hooks of the table the installed Streamlit's frontend (its shipped JS) does not write,
    as "name: value": [] where every attribute and value is there, in quotes or, for a prefix
    (`^=`) or a value Streamlit builds from a template ("stAlertContent${kind}"), its head."""
    from attention_lab.frame.streamlit_private import frontend_build  # the stylesheets above need none of it

    folder = frontend_build() / "static" / "js"
    scripts = sorted(folder.glob("*.js"))
    if not scripts:
        raise FileNotFoundError(f"no frontend code in {folder}: is Streamlit installed whole?")
    code = "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in scripts)
    quoted = set(re.findall(r"""["'`]([A-Za-z][\w-]*)["'`]""", code))
    heads = set(re.findall(r"`([A-Za-z][\w-]*)\$\{", code))  # `stAlertContent${kind}`
    lacking = [] if KEY_CLASS in quoted else [f"keyed: {KEY_CLASS}"]
    for name, selector in PARTS.items():
        for attribute, operator, value in _ATTRIBUTE.findall(selector):
            if attribute not in quoted:
                lacking.append(f"{name}: {attribute}")
            elif value and attribute == "data-testid":
                prefix = operator == "^=" and any(token.startswith(value) for token in quoted)
                built = any(value.startswith(head) and 4 <= len(head) < len(value) for head in heads)
                if not (value in quoted or prefix or built):
                    lacking.append(f"{name}: {value}")
    return lacking
