"""Every page and its URL parameters, read with `ast` from the router and the pages.

- Pages: the `st.Page(...)` calls in app/Home.py (file, title, `url_path`; the default page
  is `/`), and each page file's docstring.
- A page's parameters: the dicts it hands to `init_state` (name -> default; the URL keeps
  the short name), the names its source reads from `st.query_params` directly (/train's
  `run`), the `valid=` checks (ranges) and the label of the widget keyed by each name.
- Parameters every page reads (the router's): literal `st.query_params` reads in the frame,
  lecture and accounts rooms (`present`, `follow`, `tour`, `scene`).

Defaults that are expressions are evaluated in a namespace holding only the page's imports
and its UPPER_CASE module constants (never the page itself, which would need Streamlit's
runtime); a name set at run time (the default checkpoint) is read from its assignment.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import APP, md_escape, table

HOME = APP / "Home.py"
VIEWS = APP / "views"
ROUTER_ROOMS = ("frame", "lecture", "accounts")
#: What the router's parameters do (the code has no words for them); a name read but not
#: described here, or described but no longer read, fails the build.
ROUTER_MEANING = {
    "present": "`1`: projector mode: larger text and labels, the sidebar collapsed, captions hidden; "
    "every link the page writes keeps it",
    "follow": "a class session's code: follow the lecturer's view (from **Start a class session**)",
    "tour": "a tour's name (`seed-chapters`, or `tour-<24 hex>` for a recorded one): show the tour's bar",
    "scene": "with `tour`: open scene k (1 = the first)",
}
#: Parameters a page reads straight from st.query_params, in words.
DIRECT_MEANING = {("train", "run"): "a run's id (`run-…`): reopens that run's progress and results"}


@dataclass(frozen=True)
class Param:
    name: str
    default: str
    accepts: str = ""
    label: str = ""


@dataclass(frozen=True)
class Page:
    file: str  # "gpt" for app/views/gpt.py
    url: str  # "/gpt"
    title: str
    summary: str
    in_menu: bool
    params: tuple[Param, ...] = field(default=())


# ---------------------------------------------------------------- the router's pages


def _kw(call: ast.Call, name: str) -> Any:
    for kw in call.keywords:
        if kw.arg == name and isinstance(kw.value, ast.Constant):
            return kw.value.value
    return None


def _page_calls() -> list[tuple[ast.Call, bool]]:
    """Every st.Page(...) in Home.py and whether it sits in the sidebar menu (SECTIONS)."""
    found = []
    for node in ast.parse(HOME.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            menu = node.targets[0].id == "SECTIONS"
            for call in ast.walk(node.value):
                if isinstance(call, ast.Call) and getattr(call.func, "attr", "") == "Page":
                    found.append((call, menu))
    return found


def _file_of(call: ast.Call) -> str:
    arg = call.args[0]
    assert isinstance(arg, ast.BinOp) and isinstance(arg.right, ast.Constant), ast.unparse(arg)
    return Path(arg.right.value).stem


def read_pages() -> list[Page]:
    pages = []
    for call, in_menu in _page_calls():
        file = _file_of(call)
        url = "/" if _kw(call, "default") else "/" + (_kw(call, "url_path") or file)
        tree = ast.parse((VIEWS / f"{file}.py").read_text())
        summary = (ast.get_docstring(tree) or "").split("\n\n")[0]
        params = tuple(_page_params(file, tree))
        pages.append(Page(file, url, _kw(call, "title") or file, " ".join(summary.split()), in_menu, params))
    return pages


# ---------------------------------------------------------------- a page's parameters


def _namespace(tree: ast.Module) -> dict[str, Any]:
    """The page's imports and UPPER_CASE constants, each tried on its own."""
    namespace: dict[str, Any] = {}
    for node in tree.body:
        constant = (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id.isupper()
        )
        if isinstance(node, ast.Import | ast.ImportFrom) or constant:
            with contextlib.suppress(Exception), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(ast.Module([node], []), "<page>", "exec"), namespace)  # noqa: S102
    return namespace


def _assignments(tree: ast.Module, name: str) -> list[ast.expr]:
    """The values a module-level name is assigned (in if/else branches too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            found.append(node.value)
    return found


def _value(expr: ast.expr, namespace: dict[str, Any], tree: ast.Module) -> str:
    """A default as the URL writes it, or words for one set at run time."""
    if isinstance(expr, ast.IfExp):  # "gpt-sinusoidal" if "gpt-sinusoidal" in choices else choices[0]
        return _value(expr.body, namespace, tree)
    try:
        value = eval(compile(ast.Expression(expr), "<default>", "eval"), namespace)  # noqa: S307
    except Exception:
        if isinstance(expr, ast.Name):
            options = [_value(v, namespace, tree) for v in _assignments(tree, expr.id)]
            known = [o for o in options if o != "set by the page"]
            if known:
                return " or ".join(dict.fromkeys(known)) + (
                    " (or as the page decides)" if len(known) < len(options) else ""
                )
        return "set by the page"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, list | tuple):
        return f"`{','.join(map(str, value))}`" if value else "empty"
    return f"`{value}`" if value != "" else "empty"


def _accepts(expr: ast.expr, namespace: dict[str, Any]) -> str:
    """A valid= check in words: in_range(a, b) -> a to b; v in NAMES -> one of ...; else the test."""
    if isinstance(expr, ast.Call) and getattr(expr.func, "id", "") == "in_range":
        bounds = ast.fix_missing_locations(ast.Expression(ast.List(expr.args, ast.Load())))
        try:
            low, high = eval(compile(bounds, "<range>", "eval"), namespace)  # noqa: S307
        except Exception:
            return ast.unparse(expr)
        return f"{low:g} to {high:g}"
    if isinstance(expr, ast.Lambda):
        body = expr.body
        if (
            isinstance(body, ast.Compare)
            and isinstance(body.ops[0], ast.In)
            and isinstance(body.comparators[0], ast.Name)
        ):
            choices = namespace.get(body.comparators[0].id)
            if isinstance(choices, list | tuple | dict) and 0 < len(choices) <= 12:
                return "one of " + ", ".join(f"`{c}`" for c in choices)
            if isinstance(choices, list | tuple | dict) and choices:
                return f"one of {len(choices)} values, e.g. `{next(iter(choices))}`"
            return (
                "a checkpoint the page offers" if body.comparators[0].id == "choices" else ast.unparse(body)
            )
        return f"`{ast.unparse(body)}`"
    return ""


def _dict_items(
    expr: ast.expr, namespace: dict[str, Any], tree: ast.Module
) -> list[tuple[str, ast.expr | None, Any]]:
    """(name, value expression or None, evaluated value) of a dict literal, its ** parts
    evaluated; a Name is looked up among the module's assignments."""
    if isinstance(expr, ast.Name):
        values = _assignments(tree, expr.id)
        return _dict_items(values[0], namespace, tree) if values else []
    if not isinstance(expr, ast.Dict):
        return []
    items = []
    for key, value in zip(expr.keys, expr.values, strict=True):
        if key is None:  # **{f"{s}_{w.name}": False for ...}
            try:
                spread = eval(compile(ast.Expression(value), "<spread>", "eval"), namespace)  # noqa: S307
            except Exception:
                continue
            items += [(str(k), None, v) for k, v in spread.items()]
        elif isinstance(key, ast.Constant):
            items.append((str(key.value), value, None))
    return items


@functools.cache
def panel_labels() -> dict[str, str]:
    """The labels of widgets that pages draw through the explorers' panels (gpt_panels,
    decoding, ...): a page's own label of the same name wins."""
    labels: dict[str, str] = {}
    for path in sorted((APP / "explorers").glob("*.py")):
        for name, label in _labels(ast.parse(path.read_text())).items():
            labels.setdefault(name, label)
    return labels


def _init_state_calls(tree: ast.Module) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", "") == "init_state" or getattr(node.func, "attr", "") == "init_state")
    ]


def _labels(tree: ast.Module) -> dict[str, str]:
    """name -> the label of the widget keyed P + "name" (or f"{P}name")."""
    labels = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
            continue
        for kw in node.keywords:
            if kw.arg != "key":
                continue
            key = kw.value
            if isinstance(key, ast.BinOp) and isinstance(key.right, ast.Constant):
                labels.setdefault(str(key.right.value), str(node.args[0].value))
            elif isinstance(key, ast.JoinedStr) and isinstance(key.values[-1], ast.Constant):
                labels.setdefault(str(key.values[-1].value), str(node.args[0].value))
    return labels


def direct_reads(tree: ast.Module, constants: dict[str, Any] | None = None) -> list[str]:
    """Names read from st.query_params: `.get("x")`, `["x"]` and `"x" in st.query_params`
    (a Name resolving to a string constant counts too)."""
    constants = constants or {}

    def literal(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name) and isinstance(constants.get(node.id), str):
            return constants[node.id]
        return None

    found = []
    for node in ast.walk(tree):
        target, arg = None, None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            target, arg = node.func.value, node.args[0]
        elif isinstance(node, ast.Subscript):
            target, arg = node.value, node.slice
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In):
            target, arg = node.comparators[0], node.left
        name = literal(arg) if arg is not None else None
        if isinstance(target, ast.Attribute) and target.attr == "query_params" and name:
            found.append(name)
    return list(dict.fromkeys(found))


def _page_params(file: str, tree: ast.Module) -> list[Param]:
    namespace = _namespace(tree)
    labels = panel_labels() | _labels(tree)
    params: dict[str, Param] = {}
    for call in _init_state_calls(tree):
        defaults = call.args[0] if call.args else None
        valid_expr = (
            call.args[1]
            if len(call.args) > 1
            else next((k.value for k in call.keywords if k.arg == "valid"), None)
        )
        checks = (
            {name: expr for name, expr, _ in _dict_items(valid_expr, namespace, tree) if expr is not None}
            if valid_expr
            else {}
        )
        spread_checks = {}
        if isinstance(valid_expr, ast.Dict | ast.Name):
            for node in (
                [valid_expr] if isinstance(valid_expr, ast.Dict) else _assignments(tree, valid_expr.id)[:1]
            ):
                for key, value in (
                    zip(node.keys, node.values, strict=True) if isinstance(node, ast.Dict) else []
                ):
                    if key is None and isinstance(value, ast.DictComp):
                        with contextlib.suppress(Exception):
                            keys = ast.fix_missing_locations(
                                ast.Expression(ast.SetComp(value.key, value.generators))
                            )
                            names = eval(compile(keys, "<k>", "eval"), namespace)  # noqa: S307
                            spread_checks.update(dict.fromkeys(names, value.value))
        for name, expr, evaluated in _dict_items(defaults, namespace, tree) if defaults is not None else []:
            default = _value(expr, namespace, tree) if expr is not None else _shown(evaluated)
            check = checks.get(name) or spread_checks.get(name)
            accepts = _accepts(check, namespace) if check is not None else ""
            params[name] = Param(name, default, accepts, labels.get(name, ""))
    for name in direct_reads(tree):
        if name not in params:
            params[name] = Param(name, "unset", "", DIRECT_MEANING.get((file, name), ""))
    return list(params.values())


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"


def router_params() -> list[str]:
    """Parameters the router's rooms read on every page, in the order first read."""
    names: list[str] = []
    for room in ROUTER_ROOMS:
        for path in sorted((APP / room).rglob("*.py")):
            tree = ast.parse(path.read_text())
            constants = {
                t.id: n.value.value
                for n in tree.body
                if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                for t in n.targets
                if isinstance(t, ast.Name)
            }
            constants |= {
                t.id: v.value
                for n in tree.body
                if isinstance(n, ast.Assign)
                and isinstance(n.targets[0], ast.Tuple)
                and isinstance(n.value, ast.Tuple)
                for t, v in zip(n.targets[0].elts, n.value.elts, strict=False)
                if isinstance(t, ast.Name) and isinstance(v, ast.Constant)
            }
            names += [n for n in direct_reads(tree, constants) if n not in names]
    return names


# ---------------------------------------------------------------- the page


def anchor(page: Page) -> str:
    """The heading id of a page's section (Material's toc slug of its heading)."""
    return "page-" + (page.file if page.url != "/" else "home")


def markdown() -> str:
    pages = read_pages()
    rows = [[f"[`{p.url}`](#{anchor(p)})", md_escape(p.title), md_escape(p.summary)] for p in pages]
    parts = [table(["Address", "Title", "What it shows"], rows), ""]
    parts += ["## Every page", "", "These parameters work on every page (the router reads them):", ""]
    router = router_params()
    missing = [n for n in router if n not in ROUTER_MEANING]
    stale = [n for n in ROUTER_MEANING if n not in router]
    if missing or stale:
        raise ValueError(f"router parameters without words: {missing}; described but not read: {stale}")
    parts += [table(["Parameter", "What it does"], [[f"`{n}`", ROUTER_MEANING[n]] for n in router]), ""]
    for page in pages:
        parts += [f"## `{page.url}` {page.title} {{#{anchor(page)}}}", "", md_escape(page.summary), ""]
        if not page.in_menu:
            parts += ["Not in the sidebar menu: open it by its address.", ""]
        if page.params:
            rows = [
                [f"`{p.name}`", md_escape(p.default), md_escape(p.accepts), md_escape(p.label)]
                for p in page.params
            ]
            parts += [table(["Parameter", "Default", "Accepts", "Widget / meaning"], rows), ""]
        else:
            parts += ["No parameters of its own.", ""]
    return "\n".join(parts)


def tours_markdown() -> str:
    """The shipped tours (app/tours/*.json), scene by scene, each scene a link."""
    import json
    from urllib.parse import urlencode

    parts = []
    for path in sorted((APP / "tours").glob("*.json")):
        tour = json.loads(path.read_text())
        parts += [f"**`{path.stem}`**: {md_escape(tour['title'])}. Open it with `/?tour={path.stem}`.", ""]
        rows = []
        for k, scene in enumerate(tour["scenes"], 1):
            query = urlencode({**scene["params"], "tour": path.stem, "scene": k})
            rows.append([str(k), f"`/{scene['page']}?{query}`", md_escape(scene["note"])])
        parts += [table(["Scene", "Link", "Note"], rows), ""]
    return "\n".join(parts)
