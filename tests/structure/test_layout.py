"""The layout holds: arrows run one way (app -> serving -> transformer_core), no import
cycles between modules, the model library imports no job-system modules, and no module or
function grows past the size a reader can hold. Read from the source with `ast`, so a lazy
import inside a function counts as much as one at the top."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from attention_lab.testing.layout import (
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


def room_of(module: str) -> str:
    """The room a module lives in: a sub-package of attention_lab (attention_lab.models), the
    package's own top-level modules (attention_lab.cli -> attention_lab), or a top folder."""
    parts = module.split(".")
    if parts[0] == "attention_lab" and len(parts) > 1 and (ROOT / "app" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


#: The arrows each room may follow (besides its own). Pages and the router sit on top and may
#: use every room; the lab's own package root (cli, logs) may too.
ARROWS = {
    "transformer_core": set(),
    "attention_lab.serving": {"transformer_core"},
    "attention_lab.lessons": {"transformer_core"},
    "attention_lab.deploy": {"attention_lab.frame", "attention_lab.serving", "transformer_core"},
    "attention_lab.frame": set(),
    "attention_lab.models": {"attention_lab.frame", "attention_lab.serving", "transformer_core"},
    "attention_lab.charts": {"attention_lab.models", "transformer_core"},
    "attention_lab.accounts": {
        "attention_lab.frame",
        "attention_lab.models",
        "attention_lab.serving",
        "transformer_core",
    },
    "attention_lab.lecture": {"attention_lab.accounts", "attention_lab.frame", "attention_lab.serving"},
    "attention_lab.viewmodel": {"attention_lab.charts", "attention_lab.models", "transformer_core"},
    "attention_lab.explorers": {
        "attention_lab.viewmodel",
        "attention_lab.charts",
        "attention_lab.frame",
        "attention_lab.models",
        "transformer_core",
    },
    "attention_lab.notebook": {
        "attention_lab.charts",
        "attention_lab.explorers",
        "attention_lab.viewmodel",
        "transformer_core",
    },
    "attention_lab.lesson_pages": {
        "attention_lab.charts",
        "attention_lab.frame",
        "attention_lab.lessons",
        "attention_lab.models",
        "transformer_core",
    },
    "attention_lab.training": {
        "attention_lab.accounts",
        "attention_lab.charts",
        "attention_lab.explorers",
        "attention_lab.frame",
        "attention_lab.models",
        "attention_lab.serving",
        "transformer_core",
    },
}
LAB_ROOMS = {room for room in ARROWS if room.startswith("attention_lab.")} | {"attention_lab.testing"}
TESTING = "attention_lab.testing"  # the harness tests and benchmarks share: above every room
LAB_ROOMS = {room for room in ARROWS if room.startswith("attention_lab.")}
for top in ("attention_lab", "attention_lab.views", "attention_lab.Home"):  # the command, pages, router
    ARROWS[top] = LAB_ROOMS | {"attention_lab", "transformer_core"}
ARROWS[TESTING] = LAB_ROOMS | {"attention_lab", "transformer_core"}
LAB_ROOMS.add(TESTING)
ARROWS["benchmarks"] = LAB_ROOMS | {"attention_lab", "transformer_core", "benchmarks"}
ARROWS["tests"] = LAB_ROOMS | {"attention_lab", "transformer_core", "tests"}


def test_the_import_graph_has_no_cycles() -> None:
    graph = import_graph(ALL)
    assert sum(map(len, graph.values())) > 100  # the graph was read (a broken reader finds nothing)
    assert cycles(graph) == []


def test_a_cycle_is_found_when_there_is_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_room_has_its_arrows_stated() -> None:
    rooms = {room_of(m) for m in ALL}
    assert rooms - set(ARROWS) == set()
    assert {"attention_lab.models", "attention_lab.lecture", "benchmarks"} <= rooms  # the reader found them


def test_arrows_run_only_where_the_layout_allows() -> None:
    """Rooms import only the rooms below them: URL state (frame) knows no classroom or tour,
    the library knows no app, tests and benchmarks never import each other."""
    wrong = [
        f"{module} -> {target}"
        for module, targets in import_graph(ALL).items()
        for target in targets
        if room_of(target) != room_of(module) and room_of(target) not in ARROWS[room_of(module)]
    ]
    assert wrong == []


def test_the_room_arrows_form_no_cycle() -> None:
    assert cycles({room: targets & set(ARROWS) for room, targets in ARROWS.items()}) == []


def test_every_package_folder_is_declared_in_pyproject() -> None:
    """A sub-package missing from pyproject's `packages` would be missing from the wheel."""
    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        package_of_init(init)
        for base in ("app", "transformer_core")
        for init in (ROOT / base).rglob("__init__.py")
    }
    assert found <= declared


def package_of_init(init: Path) -> str:
    parts = list(init.parent.relative_to(ROOT).parts)
    return ".".join(["attention_lab", *parts[1:]] if parts[0] == "app" else parts)


@pytest.mark.parametrize("module", sorted(m for m in ALL if package_of(m) == "transformer_core"))
def test_the_model_library_imports_no_job_system(module: str) -> None:
    tree = ast.parse(ALL[module].read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names & LIBRARY_FORBIDDEN == set()


def test_modules_and_functions_stay_small() -> None:
    code = {m: p for m, p in ALL.items() if package_of(m) != "tests"}  # a test module may be long
    long_modules = {m: n for m, n in module_lines(code).items() if n > MAX_MODULE_LINES}
    long_functions = {f: n for f, n in function_lines(code).items() if n > MAX_FUNCTION_LINES}
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
        "transformer_core.cli; print(sorted(m for m in ('sqlite3', 'redis', 'rq', 'streamlit', "
        "'attention_lab') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
