"""What the documentation tests share: the pages' Markdown, their fenced blocks and links, the
built site's HTML, and the generators of docs/gen/ (imported from the docs folder)."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
if str(DOCS) not in sys.path:
    sys.path.insert(0, str(DOCS))

from gen import cli_ref, pages_ref, settings_ref, shapes  # noqa: E402,F401


@dataclass(frozen=True)
class Built:
    """The site built by the `site` fixture: its folder, mkdocs's exit status and output."""

    folder: Path
    status: int
    output: str


def markdown_files() -> list[Path]:
    """README, the changelog and every page of the site's source."""
    return [README, ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]


# ---------------------------------------------------------------- fenced blocks

FENCE = re.compile(
    r"^(?P<indent> *)(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence) *$", re.M | re.S
)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    title: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced code block of a Markdown file, with its language and title="..."."""
    text = path.read_text()
    found = []
    for m in FENCE.finditer(text):
        info = m.group("info").strip()
        language = info.split()[0] if info else ""
        title = re.search(r'title="([^"]*)"', info)
        indent = len(m.group("indent"))
        body = "\n".join(line[indent:] for line in m.group("body").splitlines())
        found.append(
            Block(path, text.count("\n", 0, m.start()) + 1, language, title.group(1) if title else "", body)
        )
    return found


@dataclass(frozen=True)
class Example:
    block: Block
    shape: Block | None  # the ```json title="output shape"``` block right after it


def examples() -> list[Example]:
    """Every block titled "example" (bash or python), with the output shape shown after it."""
    found = []
    for path in markdown_files():
        listed = blocks(path)
        for i, block in enumerate(listed):
            if block.title != "example":
                continue
            after = listed[i + 1] if i + 1 < len(listed) else None
            shape = after if after is not None and after.title == "output shape" else None
            found.append(Example(block, shape))
    return found


# ---------------------------------------------------------------- links


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def without_code(text: str) -> str:
    """The Markdown with fenced blocks and inline code blanked (links there are examples)."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return re.sub(r"`[^`\n]*`", "", text)


def markdown_links(path: Path) -> list[str]:
    return LINK.findall(without_code(path.read_text()))


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and Python-Markdown's toc both make it for plain text."""
    text = re.sub(r"[`*_]|\{#[^}]*\}", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return re.sub(r"[ ]+", "-", text)


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (an explicit {#id} wins)."""
    found = set()
    for line in without_code(path.read_text()).splitlines():
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            explicit = re.search(r"\{#([^}]+)\}", m.group(1))
            found.add(explicit.group(1) if explicit else slug(m.group(1)))
    return found


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for key in ("id", "name") if tag == "a" else ("id",):
            if values.get(key):
                self.ids.add(values[key] or "")
        for key in ("href", "src"):
            if values.get(key):
                self.links.append(values[key] or "")


def read_html(path: Path) -> tuple[set[str], list[str]]:
    """(the ids, the href/src targets) of a built page."""
    parser = _Html()
    parser.feed(path.read_text())
    return parser.ids, parser.links
