"""View state mirrored in the URL query parameters, so a copied link reopens the view.

Widget keys with no value yet are seeded from the URL (else their default); on every
run the current widget values are written back to the URL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st


def _cast(raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    return raw


def init_state(defaults: dict[str, Any], valid: dict[str, Callable[[Any], bool]] | None = None) -> None:
    """Seed each widget key that has no value yet from the URL, else from its default.

    Values that do not parse or fail their `valid` check fall back to the default.
    """
    valid = valid or {}
    for key, default in defaults.items():
        if key in st.session_state:
            continue
        value = default
        if key in st.query_params:
            try:
                value = _cast(st.query_params[key], default)
                if key in valid and not valid[key](value):
                    value = default
            except ValueError:
                value = default
        st.session_state[key] = value


def write_state(keys: list[str]) -> None:
    """Mirror the given session_state keys into the URL."""
    params = {}
    for key in keys:
        value = st.session_state.get(key)
        if value is None:
            continue
        params[key] = str(value).lower() if isinstance(value, bool) else str(value)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
