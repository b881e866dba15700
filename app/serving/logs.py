"""The lab's log lines, written as Streamlit writes its own: the `attention_lab` and
`transformer_core` loggers take Streamlit's `logger.level` and `logger.messageFormat`, in the
app processes (the router calls `app_logging`, which acts once a process) and in the run
processes and workers (`process_logging`: the level and format passed down in their
environment by `child_env`, else Streamlit's defaults).

Why in serving: run processes and workers are serving's, and serving imports nothing of the
app; Streamlit itself is imported only on the app's side (a run process never loads it).
Records still propagate to the root logger, where nothing in a lab process writes them again
and where tests read them.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from typing import TextIO

LOGGERS = ("attention_lab", "transformer_core")
LEVEL_ENV, FORMAT_ENV = "STREAMLIT_LOGGER_LEVEL", "STREAMLIT_LOGGER_MESSAGE_FORMAT"  # Streamlit's own
DEFAULT_LEVEL, DEFAULT_FORMAT = "info", "%(asctime)s %(message)s"  # Streamlit's defaults
_PASSED_DOWN: dict[str, str] = {}  # what child_env hands on, once this process is set up


class StderrHandler(logging.StreamHandler):
    """Writes to sys.stderr as it is at each line, as the standard library's last-resort handler
    does: a stream taken once can be closed by whoever swapped it in (pytest's capture)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        """StreamHandler sets it; the line's own stderr is used instead."""


def install(level: str, message_format: str) -> None:
    """Give each lab logger one stderr handler in `message_format` (milliseconds as Streamlit
    shows them) at `level` (a name Streamlit accepts; an unknown one reads as info)."""
    number = logging.getLevelName(level.upper())
    formatter = logging.Formatter(message_format)
    formatter.default_msec_format = "%s.%03d"
    for name in LOGGERS:
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if isinstance(h, StderrHandler)]:
            logger.removeHandler(old)
        handler = StderrHandler()
        handler.setFormatter(formatter)
        logger.addHandler(handler)
        logger.setLevel(number if isinstance(number, int) else logging.INFO)
    _PASSED_DOWN.update({LEVEL_ENV: level, FORMAT_ENV: message_format})


@functools.cache
def app_logging() -> None:
    """In an app process, once (the router calls it every run): Streamlit's level and format."""
    import streamlit as st

    install(str(st.get_option("logger.level")), str(st.get_option("logger.messageFormat")))


def process_logging() -> None:
    """In a run process or a worker: the level and format passed down, else Streamlit's defaults."""
    install(os.environ.get(LEVEL_ENV) or DEFAULT_LEVEL, os.environ.get(FORMAT_ENV) or DEFAULT_FORMAT)


def child_env() -> dict[str, str]:
    """Environment for a process started from here to log as this one does (empty before set up)."""
    return dict(_PASSED_DOWN)
