"""Streamlit's AppTest run as a server runs pages: each page script compiled once, and the
"No runtime found" warnings that are expected outside a server kept quiet.

Why: AppTest compiles a page again on every run (20-45 ms that no user pays), which would
count in every page benchmark and slow every fuzzed case.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from attention_lab.frame.streamlit_private import share_apptest_scripts


@functools.cache
def share_script_cache() -> Any:
    """From now on every AppTest of this process shares one compiled-script cache (returned)."""
    return share_apptest_scripts()


def quiet_streamlit() -> None:
    """Streamlit's loggers say only errors ("No runtime found" warnings are expected outside a server)."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)
