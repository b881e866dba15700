"""Headless Chromium as the browser tests and browser benchmarks launch it (Playwright's
`executable_path` and `args`).

Why one set of flags: a benchmark's page times mean something only for the browser the
tests check the pages in.
"""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
