"""User text in Markdown (st.markdown, st.caption, notices) shown as itself: Streamlit renders
no raw HTML there and neutralises `javascript:` links, but a Markdown image or link written in
the text would still become one (an image from any address is a tracking pixel on a shared link)."""

from __future__ import annotations

import re


def md_code(text: str) -> str:
    """`text` as inline code in Markdown: its fence is longer than any run of backticks inside
    (CommonMark), so no text can end the code early and be read as Markdown (an image, a link)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"`{text}`"


def md_text(text: str) -> str:
    """`text` shown as itself in Markdown: every punctuation mark that could start Markdown
    inside a line (an image, a link, emphasis, code, maths, a Streamlit directive) is
    backslash-escaped."""
    return re.sub(r"([\\`*_\[\]()!<>~:$&|])", r"\\\1", text)


SHOWN_CHARS = 40  # a URL value in a notice: its first 40 characters


def visible(text: str) -> str:
    """User text safe to echo in a message: every character that is not printable (control
    characters such as BEL or ESC, newlines, zero-width marks) is written as [U+XXXX]."""
    return "".join(c if c == " " or c.isprintable() else f"[U+{ord(c):04X}]" for c in text)


def shown(raw: str) -> str:
    """A URL value as a notice shows it: `visible`, at most SHOWN_CHARS characters."""
    return visible(raw[:SHOWN_CHARS]) + ("…" if len(raw) > SHOWN_CHARS else "")
