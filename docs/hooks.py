"""MkDocs hook: the reference pages are generated from the code while the site is built.

A page holding a marker `<!-- gen:NAME -->` gets that generator's Markdown in its place
(docs/gen/: settings, cli, pages, json, layout), and the architecture section gets a page per
package. A generator that fails logs a warning, so `mkdocs build --strict` fails with it.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import cli_ref, json_ref, layout_ref, pages_ref, settings_ref  # noqa: E402

log = logging.getLogger("mkdocs.plugins.attention_lab")
MARKER = re.compile(r"<!-- gen:(\w+) -->")
GENERATORS = {
    "settings": settings_ref.markdown,
    "cli": cli_ref.markdown,
    "pages": pages_ref.markdown,
    "tours": pages_ref.tours_markdown,
    "json": json_ref.markdown,
    "layout": layout_ref.overview_markdown,
}
ARCHITECTURE = "architecture.md"


def _generated(name: str, page: str) -> str:
    try:
        return GENERATORS[name]()
    except Exception as exc:  # a failing generator fails a strict build, with its reason
        log.warning("%s: generating '%s' failed: %s: %s", page, name, type(exc).__name__, exc)
        return f'!!! failure "Not generated"\n    `{name}`: {type(exc).__name__}: {exc}\n'


def on_config(config: Any) -> Any:
    """Architecture's package pages go under the Architecture page in the navigation."""
    arrows = layout_ref.read_arrows()
    pages = [{p.room: layout_ref.page_name(p.room)} for p in layout_ref.packages(arrows)]
    for entry in config["nav"] or []:
        if isinstance(entry, dict) and "Architecture" in entry:
            section = entry["Architecture"]
            entry["Architecture"] = [*(section if isinstance(section, list) else [section]), *pages]
    return config


def on_files(files: Files, config: Any) -> Files:
    arrows = layout_ref.read_arrows()
    for package in layout_ref.packages(arrows):
        content = layout_ref.package_markdown(package, arrows)
        files.append(File.generated(config, layout_ref.page_name(package.room), content=content))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    return MARKER.sub(lambda m: _generated(m.group(1), page.file.src_uri), markdown)
