"""The layout holds: arrows run one way (app -> serving -> transformer_core), no import
cycles between modules, the model library imports no job-system modules, and no module or
function grows past the size a reader can hold. Read from the source with `ast`, so a lazy
import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.layout import (
    MAX_FUNCTION_LINES,
    MAX_MODULE_LINES,
    cycles,
    function_lines,
    import_graph,
    module_lines,
    sources,
)

ROOT = Path(__file__).resolve().parents[2]
ALL = sources(ROOT)
LIBRARY_FORBIDDEN = {"sqlite3", "subprocess", "signal", "redis", "rq", "streamlit"}


def package_of(module: str) -> str:
    return module.split(".")[0]


def test_the_import_graph_has_no_cycles() -> None:
    graph = import_graph(ALL)
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
        for module, targets in import_graph(ALL).items()
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
    long_modules = {m: n for m, n in module_lines(ALL).items() if n > MAX_MODULE_LINES}
    long_functions = {f: n for f, n in function_lines(ALL).items() if n > MAX_FUNCTION_LINES}
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


def test_importing_the_library_loads_no_job_system() -> None:
    """What the issue found: `from transformer_core.train import Trainer` loaded sqlite3.
    (subprocess and signal come with torch itself, so only the static check above covers them.)"""
    code = (
        "import sys, transformer_core, transformer_core.train, transformer_core.interp, transformer_core.io, "
        "transformer_core.cli; print(sorted(m for m in ('sqlite3', 'redis', 'rq', 'streamlit', 'serving') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
