"""The rooms and their arrows, from `ARROWS` in tests/structure/test_layout.py (the test that
fails when an import runs against them), and a page per package from the source's docstrings.

`ARROWS` is read with `ast`: the dict literal, then the module-level statements after it
that add the top's arrows (pages, router, tests, benchmarks), run on their own.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from . import APP, ROOT, md_escape, table

LAYOUT_TEST = ROOT / "tests" / "structure" / "test_layout.py"
LIBRARY = ROOT / "transformer_core"


def read_arrows() -> dict[str, set[str]]:
    """room -> the rooms it may import, as the structure test states them."""
    tree = ast.parse(LAYOUT_TEST.read_text())
    start = next(
        i
        for i, node in enumerate(tree.body)
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ARROWS" for t in node.targets)
    )
    namespace: dict[str, object] = {}
    for node in tree.body[start:]:
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            break
        try:
            exec(compile(ast.Module([node], []), str(LAYOUT_TEST), "exec"), namespace)  # noqa: S102
        except Exception:
            if node is tree.body[start]:
                raise
            break
    arrows = namespace["ARROWS"]
    assert isinstance(arrows, dict)
    return {room: set(targets) for room, targets in arrows.items()}


def lab_rooms(arrows: dict[str, set[str]]) -> list[str]:
    """The rooms of the distribution (not tests or benchmarks)."""
    return sorted(r for r in arrows if r.split(".")[0] in ("attention_lab", "transformer_core"))


def top_rooms(arrows: dict[str, set[str]]) -> list[str]:
    """The rooms on top, which may use every room and the package root (the command, the
    router, the pages, the test harness): shown as one box, not as arrows."""
    return [r for r in lab_rooms(arrows) if r == "attention_lab" or "attention_lab" in arrows[r]]


def reduced(arrows: dict[str, set[str]], rooms: list[str]) -> set[tuple[str, str]]:
    """The arrows between `rooms` without those another path implies (transitive reduction)."""
    edges = {(a, b) for a in rooms for b in arrows.get(a, set()) if b in rooms and a != b}

    def reach(start: str, skip: tuple[str, str]) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            for a, b in edges:
                if a == node and (a, b) != skip and b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    return {(a, b) for a, b in edges if b not in reach(a, (a, b))}


def short(room: str) -> str:
    return room.removeprefix("attention_lab.")


TOP = "pages, router, command, tests"
BOX_H, GAP_X, GAP_Y, CHAR_W = 30, 18, 64, 7.4


def _levels(rooms: list[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """Rows of the picture, top first: a room sits one row above the lowest room it uses."""
    depth: dict[str, int] = {}

    def depth_of(room: str) -> int:
        if room not in depth:
            below = [b for a, b in edges if a == room]
            depth[room] = 1 + max(map(depth_of, below)) if below else 0
        return depth[room]

    deepest = max(map(depth_of, rooms), default=0)
    rows: list[list[str]] = [[TOP]] + [[] for _ in range(deepest + 1)]
    for room in rooms:
        rows[1 + deepest - depth_of(room)].append(room)
    return rows


def svg(arrows: dict[str, set[str]]) -> str:
    """The rooms as boxes in rows and their arrows (transitive reduction), drawn in the text
    colour of the page (light or dark), with the top rooms as one box above the rest."""
    top = set(top_rooms(arrows))
    rooms = [r for r in lab_rooms(arrows) if r not in top]
    edges = reduced(arrows, rooms)
    edges |= {(TOP, r) for r in rooms if all(b != r for _, b in edges)}
    rows = _levels(rooms, edges)
    width = lambda r: len(short(r)) * CHAR_W + 20  # noqa: E731
    place: dict[str, tuple[float, float]] = {}
    for i, row in enumerate(rows):  # order each row by where the rooms above it point
        above = {b: [place[a][0] for a, bb in edges if bb == b and a in place] for b in row}
        row.sort(key=lambda r: (sum(above[r]) / len(above[r]) if above[r] else 0, r))
        for j, room in enumerate(row):
            place[room] = (j, i)
    widths = [sum(width(r) for r in row) + GAP_X * (len(row) - 1) for row in rows]
    total = max(widths) + 20
    boxes: dict[str, tuple[float, float, float]] = {}  # room -> x, y, width
    for i, row in enumerate(rows):
        x = (total - widths[i]) / 2
        for room in row:
            boxes[room] = (x, 10 + i * (BOX_H + GAP_Y), width(room))
            x += width(room) + GAP_X
    height = 10 + len(rows) * (BOX_H + GAP_Y)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {total:.0f} {height}" width="{total:.0f}" '
        'role="img" aria-label="The rooms of the code and which may import which" '
        'style="display:block;margin:0 auto;max-width:100%;height:auto;font:13px monospace">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="currentColor"/></marker></defs>',
    ]
    for a, b in sorted(edges):
        (xa, ya, wa), (xb, yb, wb) = boxes[a], boxes[b]
        parts.append(
            f'<line x1="{xa + wa / 2:.0f}" y1="{ya + BOX_H}" x2="{xb + wb / 2:.0f}" y2="{yb}" '
            'stroke="currentColor" stroke-opacity="0.55" marker-end="url(#arrow)"/>'
        )
    for room, (x, y, w) in boxes.items():
        box = f'x="{x:.0f}" y="{y}" width="{w:.0f}" height="{BOX_H}"'
        label = f'x="{x + w / 2:.0f}" y="{y + 20}" text-anchor="middle"'
        parts.append(f'<rect {box} rx="5" fill="none" stroke="currentColor"/>')
        parts.append(f'<text {label} fill="currentColor">{short(room)}</text>')
    parts.append("</svg>")
    return '<div class="rooms" markdown="0">\n' + "".join(parts) + "\n</div>"


# ---------------------------------------------------------------- packages and modules


@dataclass(frozen=True)
class Module:
    name: str
    lines: int
    summary: str


@dataclass(frozen=True)
class Package:
    room: str  # "attention_lab.frame", "attention_lab" (the package's root), "transformer_core"
    folder: Path
    summary: str
    modules: tuple[Module, ...]


def _summary(path: Path) -> str:
    """The first paragraph of a module's docstring, without references to the issue tracker."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    text = " ".join(doc.split("\n\n")[0].split())
    return re.sub(r" ?\((?:issues?|sessions?) [^)]*\)", "", text)


def _modules(folder: Path, dotted: str, recursive: bool) -> tuple[Module, ...]:
    paths = sorted(folder.rglob("*.py") if recursive else folder.glob("*.py"))
    found = []
    for path in paths:
        if path.name == "__init__.py" and path.parent == folder:
            continue
        rel = path.relative_to(folder).with_suffix("").parts
        rel = rel[:-1] if rel[-1] == "__init__" else rel
        found.append(Module(".".join([dotted, *rel]), len(path.read_text().splitlines()), _summary(path)))
    return tuple(found)


def packages(arrows: dict[str, set[str]]) -> list[Package]:
    """A package per room of the lab that has a folder, the package's root (its own modules:
    the command, the router), and the library with its sub-packages."""
    found = []
    for room in lab_rooms(arrows):
        folder = APP / short(room)
        if room.startswith("attention_lab.") and folder.is_dir():
            init = folder / "__init__.py"
            summary = _summary(init) if init.exists() else ""
            found.append(Package(room, folder, summary, _modules(folder, room, True)))
    found.append(
        Package("attention_lab", APP, _summary(APP / "__init__.py"), _modules(APP, "attention_lab", False))
    )
    library = _modules(LIBRARY, "transformer_core", True)
    found.append(Package("transformer_core", LIBRARY, _summary(LIBRARY / "__init__.py"), library))
    return found


def page_name(room: str) -> str:
    return (
        "architecture/"
        + (short(room) if room.startswith("attention_lab.") else room).replace(".", "-")
        + ".md"
    )


def package_markdown(package: Package, arrows: dict[str, set[str]]) -> str:
    uses = sorted(arrows.get(package.room, set()) - {package.room})
    used_by = sorted(r for r, targets in arrows.items() if package.room in targets and r != package.room)

    def link(room: str) -> str:
        name = page_name(room).removeprefix("architecture/")
        return f"[`{room}`]({name})" if _has_page(room, arrows) else f"`{room}`"

    folder = package.folder.relative_to(ROOT)
    parts = [f"# `{package.room}`", "", f"Folder `{folder}/`. {md_escape(package.summary)}", ""]
    parts += [f"**May import:** {', '.join(map(link, uses)) or 'nothing else'}.", ""]
    parts += [f"**Imported by:** {', '.join(map(link, used_by)) or 'no other room'}.", ""]
    rows = [[f"`{m.name}`", str(m.lines), md_escape(m.summary)] for m in package.modules]
    parts += [table(["Module", "Lines", "What it holds"], rows), ""]
    return "\n".join(parts)


def _has_page(room: str, arrows: dict[str, set[str]]) -> bool:
    if room in ("attention_lab", "transformer_core"):
        return True
    return room.startswith("attention_lab.") and (APP / short(room)).is_dir()


def overview_markdown() -> str:
    arrows = read_arrows()
    top = top_rooms(arrows)
    rows = []
    for room in sorted(arrows):
        targets = sorted(arrows[room] - {room})
        name = f"[`{room}`]({page_name(room)})" if _has_page(room, arrows) else f"`{room}`"
        shown = "every room" if room in top else ", ".join(f"`{t}`" for t in targets) or "nothing"
        rows.append([name, shown])
    return "\n".join(
        [
            svg(arrows),
            "",
            "An arrow means *may import*; arrows another path already implies are left out of the "
            "picture, not out of the table. The box on top stands for the rooms that may use every "
            f"room: {', '.join(f'`{t}`' for t in top)}.",
            "",
            table(["Room", "May import"], rows),
            "",
        ]
    )
