"""Every ATTENTION_LAB_* setting, read with `ast` from the functions that parse it.

The lab parses its settings in `attention_lab.serving.settings` (one function per setting,
its docstring says what it means) and the library reads one more,
`transformer_core.io.checkpoint.max_params`. A function "reads" a setting when it passes the
name (a string, or a module constant holding it) to `os.environ.get`, `os.getenv`,
`os.environ[...]` or one of settings.py's `env_int` / `env_float` / `env_choice`. Its default
is that call's literal default, else the docstring's "default ..." or "else ..." phrase, else
"unset". Nothing is imported: the page is right even where torch or Redis is missing.

`all_names_in_code()` is the independent check the tests use: every ATTENTION_LAB_* string in
the lab's and the library's source, whoever reads it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from . import APP, ROOT, md_escape, table

SOURCES = (APP / "serving" / "settings.py", ROOT / "transformer_core" / "io" / "checkpoint.py")
NAME = re.compile(r"ATTENTION_LAB_[A-Z0-9_]+")
ENV_HELPERS = {"env_int", "env_float", "env_choice"}
#: Names the lab sets for its own child processes; nobody sets them by hand.
INTERNAL = {
    "ATTENTION_LAB_WORKER_DEVICE": "set by `worker` for the processes it trains in (its resolved --device)",
}
#: What a setting's docstring leaves out (the function's docstring says only its unit).
NOTES = {
    "ATTENTION_LAB_RUNS_MAX_MB": "The disk budget of all runs together, in MB: past it the oldest runs are "
    "evicted, with a notice",
}


@dataclass(frozen=True)
class Setting:
    name: str
    default: str
    meaning: str
    where: str  # module.function that parses it


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to ATTENTION_LAB_* strings (`A, B = "...", "..."` too)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        pairs = []
        if isinstance(target, ast.Name):
            pairs = [(target, value)]
        elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
            pairs = list(zip(target.elts, value.elts, strict=False))
        for t, v in pairs:
            if isinstance(t, ast.Name) and isinstance(v, ast.Constant) and isinstance(v.value, str):
                if NAME.fullmatch(v.value):
                    found[t.id] = v.value
    return found


def _name_of(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    return None


def _reads(func: ast.FunctionDef, constants: dict[str, str]) -> list[tuple[str, ast.expr | None]]:
    """(setting, its default expression or None) for every read in `func`."""
    found = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and node.args:
            callee = node.func
            called = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            is_environ_get = called == "get" and "environ" in ast.unparse(callee)
            if called in ENV_HELPERS or is_environ_get or called == "getenv":
                name = _name_of(node.args[0], constants)
                if name:
                    default = node.args[1] if called in ENV_HELPERS and len(node.args) > 1 else None
                    found.append((name, default))
        elif isinstance(node, ast.Subscript) and "environ" in ast.unparse(node.value):
            name = _name_of(node.slice, constants)
            if name:
                found.append((name, None))
    return found


def _default(expr: ast.expr | None, doc: str) -> str:
    doc = " ".join(doc.split())
    if isinstance(expr, ast.Constant):
        value = expr.value
        return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"
    phrase = re.search(r"\bdefault:? ([^:;()]+?)(?:[:;(]|, in bytes| \(|$)", doc)
    if phrase:
        return phrase.group(1).strip().rstrip(".,")
    phrase = re.search(r",\s*([^,;:]+?) by default", doc) or re.search(r"\belse ([^;.]+)", doc)
    if phrase:
        return re.sub(r" \(`?\w+`?\)$", "", phrase.group(1).strip())
    return "unset"


def _meaning(name: str, doc: str) -> str:
    """The docstring without its leading 'NAME (...), default X:' label and without what only
    a caller of the function needs (None, bytes), plus any note for a terse docstring."""
    text = " ".join(doc.split())
    label = re.match(rf"{name}(?: \(([^)]*)\))?(?:, default [^:,]+)?(?:, in bytes)?[:,]? ?", text)
    rest = text[label.end() :] if label else text
    rest = re.sub(r"[;,] None when unset|, in bytes", "", rest)
    rest = re.sub(r"^,? ?or None for (the )?", "; unset: the ", rest).lstrip(" .,:")
    paren = label.group(1) if label else None
    if paren:
        rest = paren + rest if rest.startswith(";") else f"{rest.rstrip('.')} ({paren}).".lstrip()
    rest = f"{NOTES[name]} {rest}" if name in NOTES else rest
    return rest


def read_settings(sources: tuple[Path, ...] = SOURCES) -> list[Setting]:
    """Every setting some function in `sources` reads, in source order, once each."""
    found: dict[str, Setting] = {}
    for path in sources:
        tree = ast.parse(path.read_text())
        constants = _constants(tree)
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).replace("app.", "attention_lab.", 1)
        for func in tree.body:
            if not isinstance(func, ast.FunctionDef):
                continue
            doc = ast.get_docstring(func) or ""
            for name, default in _reads(func, constants):
                if name not in found and name not in INTERNAL:
                    found[name] = Setting(
                        name, _default(default, doc), _meaning(name, doc), f"{module}.{func.name}"
                    )
    return list(found.values())


def all_names_in_code() -> set[str]:
    """Every ATTENTION_LAB_* name in the lab's and the library's source and deploy files."""
    names: set[str] = set()
    for folder in (APP, ROOT / "transformer_core", ROOT / "deploy"):
        for path in folder.rglob("*"):
            if path.is_file() and path.suffix in (".py", ".sh", ".template", ".service", ".example", ".conf"):
                names |= set(NAME.findall(path.read_text(errors="replace")))
    return {n.rstrip("_") for n in names if not n.endswith("_")}


def anchor(name: str) -> str:
    return name.lower()


def markdown() -> str:
    found = read_settings()
    rows = [[f"[`{s.name}`](#{anchor(s.name)})", md_escape(s.default)] for s in found]
    parts = [table(["Setting", "Default"], rows), ""]
    for s in found:
        parts += [f"## `{s.name}` {{#{anchor(s.name)}}}", "", f"Default: {s.default}.", ""]
        parts += [md_escape(s.meaning), "", f"Parsed by `{s.where}()`.", ""]
    internal = "\n".join(f"- `{name}`: {why}." for name, why in sorted(INTERNAL.items()))
    parts += [
        "## Set by the lab itself",
        "",
        "Listed so that nothing in the code goes unnamed:",
        "",
        internal,
        "",
    ]
    return "\n".join(parts)
