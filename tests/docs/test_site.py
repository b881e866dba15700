"""The site builds in strict mode (a warning fails it: a broken link or anchor, a page left
out, a reference generator that failed), every link of the built site and of README.md
resolves, README stays short and keeps the commands CI runs, and no page tells history."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tests.docs.docs_support import (
    DOCS,
    README,
    ROOT,
    Built,
    anchors,
    blocks,
    markdown_files,
    markdown_links,
    read_html,
)

HISTORY = re.compile(r"\bsessions? \d+|\bissues? #?\d+|\bround \d+|\b(this|earlier|last|next) round\b", re.I)


def test_the_site_builds_in_strict_mode(site: Built) -> None:
    assert site.status == 0, site.output[-5000:]
    assert "WARNING" not in site.output, site.output[-5000:]
    for page in ("index", "teach", "learn", "research", "host", "performance", "architecture", "changelog"):
        assert (site.folder / f"{page}.html").is_file()


def test_the_reference_pages_are_generated(site: Built) -> None:
    """Each marker was replaced by its generator's output, and none failed."""
    for page, expected in {
        "reference/settings.html": "ATTENTION_LAB_RUNS_DIR",
        "reference/cli.html": "--no-causal",
        "reference/pages.html": "page-reversal",
        "reference/json.html": "output shape",
        "architecture.html": "<svg",
        "teach.html": "seed-chapters",
    }.items():
        text = (site.folder / page).read_text()
        assert expected in text, page
        assert "gen:" not in text and "Not generated" not in text, page


def test_every_internal_link_and_anchor_of_the_built_site_resolves(site: Built) -> None:
    ids_of: dict[Path, set[str]] = {}
    # 404.html is served for any missing address, so its links are absolute: left out
    pages = sorted(p for p in site.folder.rglob("*.html") if p.name != "404.html")
    for page in pages:
        ids_of[page] = read_html(page)[0]
    broken = []
    for page in pages:
        for target in read_html(page)[1]:
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or target.startswith(("mailto:", "data:", "javascript:")):
                continue
            path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if path.is_dir():
                path = path / "index.html"
            if not path.exists():
                broken.append(f"{page.relative_to(site.folder)}: {target}")
            elif (
                parts.fragment
                and path.suffix == ".html"
                and unquote(parts.fragment) not in ids_of.get(path, set())
            ):
                broken.append(f"{page.relative_to(site.folder)}: {target} (no such anchor)")
    assert broken == []
    assert len(pages) > 20


def test_every_link_of_readme_resolves() -> None:
    broken = []
    for target in markdown_links(README):
        parts = urlsplit(target)
        if parts.scheme:
            continue
        path = (ROOT / unquote(parts.path)) if parts.path else README
        if not path.exists():
            broken.append(target)
        elif parts.fragment and parts.fragment not in anchors(path):
            broken.append(f"{target} (no such anchor)")
    assert broken == []
    docs_links = {t for t in markdown_links(README) if t.startswith("docs/")}
    assert {"docs/teach.md", "docs/learn.md", "docs/research.md", "docs/host.md"} <= docs_links


def test_every_screenshot_is_used_and_every_one_used_exists() -> None:
    used = set()
    for path in markdown_files():
        used |= {(path.parent / t).resolve() for t in markdown_links(path) if t.endswith(".png")}
    shots = set((DOCS / "screenshots").glob("*.png"))
    assert {p for p in used if not p.exists()} == set()
    assert shots - used == set(), "screenshots no page shows"


def test_readme_is_short_and_runs_the_commands_ci_runs() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci_command in {b.body.strip() for b in blocks(README)}, "README's test command is not .ci/run's"
    run_app = next(b for b in blocks(README) if "attention-lab" in b.body and "venv" in b.body).body.strip()
    assert run_app in {b.body.strip() for b in blocks(DOCS / "index.md")}, "docs/index.md's start differs"


def test_no_page_tells_history() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for path in markdown_files()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if HISTORY.search(line)
    ]
    assert found == []
