"""Per-session view state, in one place: the URL mirror of each page and the widget state
the router keeps across page visits.

Widget keys with no value yet are seeded from the URL (else their default); on every
run the current widget values are written back to the URL, so a copied link reopens the view.

A page may give a `prefix`: the session_state key is then prefix + name while the URL
keeps the short name (`/reversal?text=hello`), so two pages never share a widget key.
List values (multiselect) travel as one comma-separated parameter.
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
    if isinstance(default, list):
        return [item for item in raw.split(",") if item]
    return raw


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def init_state(
    defaults: dict[str, Any],
    valid: dict[str, Callable[[Any], bool]] | None = None,
    *,
    prefix: str = "",
) -> None:
    """Seed each widget key that has no value yet from the URL, else from its default.

    Values that do not parse or fail their `valid` check fall back to the default.
    """
    valid = valid or {}
    for name, default in defaults.items():
        key = prefix + name
        if key in st.session_state:
            continue
        value = default
        if name in st.query_params:
            try:
                value = _cast(st.query_params[name], default)
                if name in valid and not valid[name](value):
                    value = default
            except (ValueError, TypeError):
                value = default
        st.session_state[key] = value


def write_state(keys: list[str], *, prefix: str = "") -> None:
    """Mirror the given session_state keys (names without prefix) into the URL."""
    params = {}
    for name in keys:
        value = st.session_state.get(prefix + name)
        if value is None:
            continue
        params[name] = _format(value)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)


def keep_form_state(keys: tuple[str, ...]) -> None:
    """Keep these widgets' values while the user is on other pages (Streamlit drops the
    state of widgets a run does not draw unless the key is assigned to itself). The router
    calls it on every run with the keys pages want kept (e.g. lab.runs.FORM_KEYS).

    A copy under a plain key restores values that Streamlit dropped anyway: a fragment
    rerun (/train's live panel) landing while another page is shown cleans up every widget
    that run did not draw."""
    kept: dict = st.session_state.setdefault("_kept_form_state", {})
    for key in keys:
        if key in st.session_state:
            kept[key] = st.session_state[key]
        if key in kept:
            st.session_state[key] = kept[key]
