"""The shape of a JSON value: its keys and the types of its leaves, in a notation that is
itself JSON (so a page can show it and a test can compare it).

    "str", "number", "bool", "null"   a leaf (int and float are both "number")
    "number|null"                     a leaf that is one or the other across a list's items
    ["number"]                        a list whose every item has that shape ([] when empty)
    {"key": ..., "key?": ...}         an object; `key?` is present in some items of a list only
"""

from __future__ import annotations

import json
from typing import Any

LEAF_ORDER = ("str", "number", "bool", "null")
Shape = Any


def shape(value: Any) -> Shape:
    """The shape of a JSON value (as json.loads returns it)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        merged: Shape = None
        for item in value:
            merged = shape(item) if merged is None else merge(merged, shape(item))
        return [] if merged is None else [merged]
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _base(key: str) -> str:
    return key[:-1] if key.endswith("?") else key


def _merge_objects(a: dict[str, Shape], b: dict[str, Shape]) -> dict[str, Shape]:
    by_base_a = {_base(k): (k, v) for k, v in a.items()}
    by_base_b = {_base(k): (k, v) for k, v in b.items()}
    merged = {}
    for base in [*by_base_a, *(k for k in by_base_b if k not in by_base_a)]:
        if base in by_base_a and base in by_base_b:
            (ka, va), (kb, vb) = by_base_a[base], by_base_b[base]
            optional = ka.endswith("?") or kb.endswith("?")
            merged[base + ("?" if optional else "")] = merge(va, vb)
        else:
            _, v = by_base_a.get(base) or by_base_b[base]
            merged[base + "?"] = v
    return merged


def merge(a: Shape, b: Shape) -> Shape:
    """One shape for two list items."""
    if a == b:
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        return _merge_objects(a, b)
    if isinstance(a, list) and isinstance(b, list):
        if not a or not b:
            return a or b
        return [merge(a[0], b[0])]
    if isinstance(a, str) and isinstance(b, str):
        kinds = set(a.split("|")) | set(b.split("|"))
        return "|".join(k for k in LEAF_ORDER if k in kinds)
    # a structure in one item, a leaf (usually null) in another: keep both, said plainly
    return {"one of": sorted([a, b], key=lambda s: json.dumps(s))}


def render(value: Shape, indent: int = 0, width: int = 88) -> str:
    """The shape as readable JSON: short parts on one line, long objects one key a line."""
    compact = json.dumps(value, ensure_ascii=False)
    if len(compact) + indent <= width or not isinstance(value, dict | list) or not value:
        return compact
    pad = " " * (indent + 2)
    if isinstance(value, list):
        return "[\n" + pad + render(value[0], indent + 2, width) + "\n" + " " * indent + "]"
    items = [f"{pad}{json.dumps(k)}: {render(v, indent + 2, width)}" for k, v in value.items()]
    return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
