"""The documentation's generated reference, read from the code at build time.

`docs/hooks.py` (an MkDocs hook) calls these modules while the site is built; the tests in
`tests/docs/` call them too, to check that the hand-written pages name only settings, flags,
pages and parameters that exist. Nothing here is imported by the lab itself.

    settings_ref   every ATTENTION_LAB_* setting: parsed with `ast` from the functions that read it
    cli_ref        every command and flag: walked from the real argparse parsers
    pages_ref      every page and its URL parameters: parsed with `ast` from Home.py and app/views/
    json_ref       the --json output shapes: the real command line run on shipped checkpoints
    layout_ref     the rooms and their arrows (tests/structure/test_layout.py), a page per package
    shapes         a JSON value's shape (keys and types), the notation the docs show
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout
APP = ROOT / "app"  # the attention_lab package


def md_escape(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ").strip()


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
