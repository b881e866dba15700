"""Count the calls of a module's function under test, keeping what it does."""

from __future__ import annotations

from types import ModuleType

import pytest


def count_calls(monkeypatch: pytest.MonkeyPatch, module: ModuleType, name: str) -> list[tuple[object, ...]]:
    """Replace `module.name` by a wrapper that records each call's arguments after the first (the
    checkpoint of a view) and calls the original. The wrapper's name is new for each count, and the
    view cache keys on it, so a count starts from an empty cache."""
    calls: list[tuple[object, ...]] = []
    plain = getattr(module, name)

    def counting(*args: object) -> object:
        calls.append(args[1:])
        return plain(*args)

    counting.__qualname__ = f"counting_{name}_{id(calls):x}"  # the cache's key: new for each count
    monkeypatch.setattr(module, name, counting)
    return calls
