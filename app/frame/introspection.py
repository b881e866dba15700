"""Whether a library still has a part, asked without using it: the probes behind
`streamlit_private.check()`. A part is named "module:Name" (a class or value in a module)."""

from __future__ import annotations

import dataclasses
import dis
import importlib
import types
from collections.abc import Iterable
from typing import Any


def find(where: str) -> Any:
    """The object at 'module:Name' ('module' alone: the module); raises where it is gone."""
    module, _, name = where.partition(":")
    found = importlib.import_module(module)
    return getattr(found, name) if name else found


def _codes(code: types.CodeType) -> Iterable[types.CodeType]:
    """A function's code and the code inside it (comprehensions, nested functions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _functions(value: Any) -> list[Any]:
    """The functions behind a class attribute: a method, a property's accessors, a static one."""
    if isinstance(value, property):
        return [f for f in (value.fget, value.fset, value.fdel) if f is not None]
    return [getattr(value, "__func__", value)]


def assigned(where: str, name: str) -> bool:
    """Whether a method of the class at `where` (or of a base) sets `self.<name>`: an instance
    attribute, which the class itself does not have until an instance is made."""
    functions = [f for cls in find(where).__mro__ for value in vars(cls).values() for f in _functions(value)]
    codes = [part for f in functions if hasattr(f, "__code__") for part in _codes(f.__code__)]
    return any(
        i.opname == "STORE_ATTR" and i.argval == name for part in codes for i in dis.get_instructions(part)
    )


def method(where: str, name: str) -> bool:
    """Whether the class at `where` has a method `name` (defined on it or a base)."""
    return callable(getattr(find(where), name, None))


def field(where: str, name: str) -> bool:
    """Whether the dataclass or NamedTuple at `where` has the field `name`."""
    cls = find(where)
    if dataclasses.is_dataclass(cls):
        return name in {f.name for f in dataclasses.fields(cls)}
    return name in getattr(cls, "_fields", ())
