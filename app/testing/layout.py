"""Reading the code base's layout from its source with `ast`: modules, the import graph and
its cycles, module and function sizes. Used by tests/structure and
benchmarks/structure_report.py (which can read another checkout, for a before/after)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOTS = ("transformer_core", "app", "benchmarks", "tests")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80


def module_name(path: Path, root: Path) -> str:
    """Dotted name of a source file: app/ is the attention_lab package (app/models/compute.py
    -> attention_lab.models.compute, app/views/gpt.py -> attention_lab.views.gpt)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[0] == "app":
        parts[0] = "attention_lab"
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources(root: Path, packages: tuple[str, ...] = PACKAGE_ROOTS) -> dict[str, Path]:
    """Every module of the given top-level folders, by dotted name."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            found[module_name(path, root)] = path
    return found


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The known modules a file imports (anywhere in it, TYPE_CHECKING blocks included);
    `from pkg import name` counts as importing pkg (its __init__) and pkg.name when that is
    a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in known}


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules its import statements run. Importing `a.b.c` first runs the
    __init__ of `a` and `a.b`: those count too, except the importer's own ancestors (they
    are initialised before it anyway) — so `models -> io.tokenizer` is an edge to `io`,
    whose __init__ may import `models` back."""
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        edges = set()
        for target in imports_of(path, known):
            parts = target.split(".")
            edges.add(target)
            edges.update(".".join(parts[:i]) for i in range(1, len(parts)))
        graph[name] = {t for t in edges if t in known and t not in ancestors and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def module_lines(modules: dict[str, Path]) -> dict[str, int]:
    return {m: len(p.read_text().splitlines()) for m, p in modules.items()}


def function_lines(modules: dict[str, Path]) -> dict[str, int]:
    """'module:line name' -> lines of every function and method."""
    return {
        f"{m}:{node.lineno} {node.name}": node.end_lineno - node.lineno + 1
        for m, p in modules.items()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
