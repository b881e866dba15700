""" "Download this view (HTML)" on every page: the page as the browser shows it (its text,
tables, widget values and interactive charts) in one file that opens offline.

The browser gathers the page (app/static/save_view.js) and fills the file's shell
(`offline.shell`, the chart code inlined: ~70 kB), which is sent only when a tab first asks for
it, in a rerun of this fragment alone: page runs carry only the button.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from attention_lab.charts import offline, script
from attention_lab.charts.component import static_url

WANTED = "save_view_wanted"  # session_state: the shell was asked for; sent in the next fragment run


def _js() -> str:
    """The button's JS: where the server serves app/static, a one-line loader of save_view.js
    (fetched once per browser page, not sent with every run); else the script bundled with the
    module it imports."""
    url = static_url("save_view.js")
    if url is None:
        return script.bundled("save_view.js")
    module = f'new URL("{url}?v={script.version("save_view.js")}", location.origin).href'
    # two lines: Streamlit reads a one-line string with a "/" in it as a file's path
    loader = f"export default (c) => import({module}).then((m) => m.default(c));"
    return f"// the button's script, fetched once per browser page\n{loader}\n"


_SAVE = st.components.v2.component(
    "attention_lab.save_view", js=_js(), css=(script.STATIC / "save_view.css").read_text(encoding="utf-8")
)


def _wanted() -> None:
    st.session_state[WANTED] = True


@st.fragment
def save_view_button(tour: dict[str, Any] | None = None, following: bool = False) -> None:
    """The buttons (call it in the sidebar): this view; with `tour` ({"title", "n", "k"}: scene
    k of n is on) the whole tour; a class follower (`following`) the views followed so far.
    The shell and the scenes' Previous / Next ride along once after a click asked for them."""
    wanted = st.session_state.pop(WANTED, False)
    data = {"shell": offline.shell() if wanted else None, "nav": offline.nav("scene") if wanted else None}
    _SAVE(key="save_view", data={**data, "tour": tour, "following": following}, on_want_change=_wanted)
