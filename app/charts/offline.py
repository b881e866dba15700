"""A view as one self-contained HTML file that opens offline: text, tables and the lab's own
interactive charts (the chart code inlined, no network), a grid of heads linked to one head
drawn large, steps with Previous / Next, and scenes (a tour) with Previous / Next and the
arrow keys. The notebook's `to_html`, `_repr_html_` and the pages' downloads write these.

A view is a list of `Scene`s, each a list of blocks: `Text` (HTML, escaped by the caller: see
`text`), `LinkedHeads` (a grid and the large map of each head it can open) and `Steps` (charts
shown one at a time). A page's download builds its scenes in the browser (save_view.js) into
`shell`.
"""

from __future__ import annotations

import html
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from attention_lab.charts import script


@dataclass(frozen=True)
class Text:
    """HTML, already escaped (`text()` escapes plain text)."""

    html: str


@dataclass(frozen=True)
class LinkedHeads:
    """A clickable grid and, per "layer.head", that head's large map; `grid["selected"]` opens first."""

    grid: dict[str, Any]
    heads: dict[str, dict[str, Any]]
    note: str = ""  # e.g. which heads were left out to keep the file small


@dataclass(frozen=True)
class Steps:
    """(caption, spec) per step: one shown at a time, Previous / Next between them."""

    steps: list[tuple[str, dict[str, Any]]]


Block = Text | LinkedHeads | Steps


@dataclass(frozen=True)
class Scene:
    title: str
    blocks: list[Block] = field(default_factory=list)


def text(words: str, tag: str = "p") -> Text:
    """Plain text in a `tag` element, escaped."""
    return Text(f"<{tag}>{html.escape(words)}</{tag}>")


class _Writer:
    """Collects the specs of one file as JSON script elements, each named once."""

    def __init__(self) -> None:
        self.data: list[str] = []

    def spec(self, value: Any) -> str:
        name = f"s{len(self.data)}"
        payload = json.dumps(value, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
        self.data.append(f'<script type="application/json" data-spec="{name}">{payload}</script>')
        return name

    def chart(self, spec: dict[str, Any]) -> str:
        return f'<div class="lab-mount" data-spec="{self.spec(spec)}"></div>'

    def block(self, block: Block) -> str:
        match block:
            case Text():
                return block.html
            case LinkedHeads():
                note = f'<p class="lab-note">{html.escape(block.note)}</p>' if block.note else ""
                return (
                    f'<div class="lab-linked" data-grid="{self.spec(block.grid)}" '
                    f'data-heads="{self.spec(block.heads)}">{note}<div class="lab-row">'
                    '<div class="lab-grid"></div><div><div class="lab-head"></div>'
                    '<p class="lab-missing lab-note" role="status" hidden></p></div></div></div>'
                )
            case Steps():
                parts = "".join(
                    f'<div class="lab-step" hidden><p>{html.escape(caption)}</p>{self.chart(spec)}</div>'
                    for caption, spec in block.steps
                )
                return f'<div class="lab-steps">{nav("step")}{parts}</div>'
        raise TypeError(f"not a block: {block!r}")


def nav(what: str) -> str:
    """Previous / Next and where we are; offline.js wires them."""
    return (
        '<div class="lab-steps-nav">'
        f'<button class="lab-nav lab-prev" type="button">◀ Previous {what}</button>'
        f'<button class="lab-nav lab-next" type="button">Next {what} ▶</button>'
        '<span class="lab-where" aria-live="polite"></span></div>'
    )


def body(scenes: list[Scene]) -> str:
    """The inside of a view's root: Previous / Next where there are several scenes, the scenes
    (the first shown), and every chart's spec as a JSON script element."""
    writer = _Writer()
    parts = "".join(
        f'<section class="lab-scene"{" hidden" if i else ""}>'
        f'<h2 tabindex="-1">{html.escape(scene.title)}</h2>'
        + "".join(writer.block(b) for b in scene.blocks)
        + "</section>"
        for i, scene in enumerate(scenes)
    )
    scenes_nav = nav("scene") if len(scenes) > 1 else ""
    return scenes_nav + parts + "".join(writer.data)


def _root(inside: str, root: str) -> str:
    """The view's element with its styles and its module script (the chart code inlined)."""
    code = script.offline_script() + f'\nstartOffline(document.getElementById("{root}"));\n'
    return (
        f"<style>{script.embed_css()}</style>"
        f'<div class="lab-embed" id="{root}">{inside}</div>'
        f'<script type="module">{code}</script>'
    )


def fragment(scenes: list[Scene]) -> str:
    """The view as an HTML fragment (a notebook's text/html output): ids unique to it, so many
    can share a page."""
    return _root(body(scenes), f"lab-view-{secrets.token_hex(6)}")


#: where `shell` leaves the title and the root's inside, for a browser to fill (the pages' download)
TITLE, BODY = "<!--lab:title-->", "<!--lab:body-->"


def shell(title: str = TITLE, inside: str = BODY, *, heading: str = "", footer: str = "") -> str:
    """A whole HTML file that opens offline around a view's inside (`body`); heading: an h1
    over it; footer: a line under it (plain text)."""
    top = f"<h1>{html.escape(heading)}</h1>" if heading else ""
    foot = f'<footer class="lab-note">{html.escape(footer)}</footer>' if footer else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title></head>"
        f'<body class="lab-embed lab-page" style="margin:0"><main class="lab-page">'
        f"{top}{_root(inside, 'lab-view')}{foot}</main></body></html>\n"
    )


def document(title: str, scenes: list[Scene], *, footer: str = "") -> str:
    """The view as a whole HTML file that opens offline; one scene's h2 is its title, several
    get `title` as an h1 over them."""
    heading = title if len(scenes) > 1 else ""
    return shell(html.escape(title), body(scenes), heading=heading, footer=footer)
