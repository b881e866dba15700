"""The code base's shape, for a before/after of a restructure: lines per package, the
largest modules and functions, modules over 500 lines and functions over 80, and the import
graph's cycles (tests/structure asserts the limits; this prints the figures).

    python benchmarks/structure_report.py                 # this checkout
    python benchmarks/structure_report.py --root /tmp/old # another one (git worktree add /tmp/old REV)
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from attention_lab.testing.layout import (  # noqa: E402
    MAX_FUNCTION_LINES,
    MAX_MODULE_LINES,
    PACKAGE_ROOTS,
    cycles,
    function_lines,
    import_graph,
    module_lines,
    sources,
)


def floors(graph: dict[str, set[str]], members: set[str]) -> int:
    """How many floors the import graph among `members` has: the longest chain of imports
    (a module importing nothing of them is floor 1). The graph must have no cycles."""
    depth: dict[str, int] = {}

    def floor(m: str) -> int:
        if m not in depth:
            depth[m] = 1 + max((floor(t) for t in graph.get(m, ()) if t in members), default=0)
        return depth[m]

    return max((floor(m) for m in members), default=0)


def folder_of(path: Path, root: Path) -> str:
    return str(path.parent.relative_to(root))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    packages = tuple(p for p in PACKAGE_ROOTS if (args.root / p).is_dir())
    modules = sources(args.root, packages)
    lines, functions = module_lines(modules), function_lines(modules)
    per_package = Counter()
    for module, n in lines.items():
        per_package[module.split(".")[0] if module.split(".")[0] in packages else "app"] += n
    print(f"{args.root}")
    print("lines per package: " + ", ".join(f"{p} {n:,}" for p, n in sorted(per_package.items())))
    print("largest modules:   " + ", ".join(f"{m} {n}" for m, n in Counter(lines).most_common(5)))
    print("largest functions: " + ", ".join(f"{f} {n}" for f, n in Counter(functions).most_common(5)))
    long_modules = sum(n > MAX_MODULE_LINES for n in lines.values())
    long_functions = sum(n > MAX_FUNCTION_LINES for n in functions.values())
    print(f"modules > {MAX_MODULE_LINES}: {long_modules}; functions > {MAX_FUNCTION_LINES}: {long_functions}")
    graph = import_graph(modules)
    app = {
        m
        for m, path in modules.items()
        if path.is_relative_to(args.root / "app") or m.split(".")[0] in ("serving", "lessons")
    }
    app -= {m for m in app if ".views." in m or m.endswith(".Home")}  # scripts, not imported
    per_folder = Counter(folder_of(modules[m], args.root) for m in app)
    print("app modules per folder: " + ", ".join(f"{f} {n}" for f, n in sorted(per_folder.items())))
    print(f"app import floors: {floors(graph, app)} (over {len(app)} modules)")
    found = cycles(graph)
    print(f"import cycles: {len(found)}" + "".join(f"\n  {' <-> '.join(c)}" for c in found))


if __name__ == "__main__":
    main()
