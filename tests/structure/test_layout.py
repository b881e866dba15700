"""The layout holds: arrows run one way (app -> serving -> transformer_core), no import
cycles between modules, the model library imports no job-system modules, and no module or
function grows past the size a reader can hold. Read from the source with `ast`, so a lazy
import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARY_FORBIDDEN = {"sqlite3", "subprocess", "signal", "redis", "rq", "streamlit"}
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80


def module_name(path: Path) -> str:
    """Dotted name of a source file (app/lab/x.py -> lab.x, app/views/gpt.py -> views.gpt)."""
    rel = path.relative_to(ROOT / "app") if path.is_relative_to(ROOT / "app") else path.relative_to(ROOT)
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources(*roots: str) -> dict[str, Path]:
    found = {}
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            found[module_name(path)] = path
    return found


ALL = sources("transformer_core", "serving", "lessons", "app")


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The known modules a file imports (anywhere in it, TYPE_CHECKING blocks included);
    `from pkg import name` counts as importing pkg.name when that is a module."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name in known}


def import_graph() -> dict[str, set[str]]:
    known = set(ALL)
    return {name: imports_of(path, known) - {name} for name, path in ALL.items()}


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


def package_of(module: str) -> str:
    return module.split(".")[0]


def test_the_import_graph_has_no_cycles() -> None:
    graph = import_graph()
    assert sum(map(len, graph.values())) > 100  # the graph was read (a broken reader finds nothing)
    assert cycles(graph) == []


def test_a_cycle_is_found_when_there_is_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_arrows_run_from_the_app_through_serving_to_the_library() -> None:
    below = {  # what each package may import
        "transformer_core": {"transformer_core"},
        "lessons": {"lessons", "transformer_core"},
        "serving": {"serving", "transformer_core"},
        "lab": {"lab", "serving", "lessons", "transformer_core"},
    }
    wrong = [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        for target in targets
        if package_of(module) in below and package_of(target) not in below[package_of(module)]
    ]
    assert wrong == []


@pytest.mark.parametrize("module", sorted(m for m in ALL if package_of(m) == "transformer_core"))
def test_the_model_library_imports_no_job_system(module: str) -> None:
    tree = ast.parse(ALL[module].read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names & LIBRARY_FORBIDDEN == set()


def test_modules_and_functions_stay_small() -> None:
    long_modules = {m: n for m, p in ALL.items() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    long_functions = {
        f"{m}:{node.lineno} {node.name}": node.end_lineno - node.lineno + 1
        for m, p in ALL.items()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    }
    assert long_modules == {} and long_functions == {}


def test_the_root_test_configuration_needs_no_browser_package() -> None:
    tree = ast.parse((ROOT / "tests" / "conftest.py").read_text())
    top_level = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    names = {a.name for n in top_level if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in top_level if isinstance(n, ast.ImportFrom) and n.module}
    assert not any(name.startswith("playwright") for name in names)


def test_test_modules_import_no_other_test_module() -> None:
    wrong = []
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tests."):
                leaf = node.module.rsplit(".", 1)[-1]
                if leaf.startswith("test_") or leaf == "conftest":
                    wrong.append(f"{path.relative_to(ROOT)} imports {node.module}")
    assert wrong == []
