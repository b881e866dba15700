"""Lecture tours: an ordered list of views ("scenes"), each a page, its URL parameters and a
short note, kept as a JSON file.

`parse_tour` turns a file's text into a Tour or a TourError that says what is wrong, for
people; tours a lecturer records are saved box-wide in the runs folder under an unguessable
id (`tour-` + 96 random bits as hex), which is also their link: `?tour=<id>&scene=<k>`.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from attention_lab.serving import settings

TOUR_ID_PATTERN = re.compile(r"^tour-[0-9a-f]{24}$")
MAX_TOUR_BYTES = 256 * 2**10
MAX_SCENES, MAX_NOTE, MAX_TITLE, MAX_PARAMS, MAX_VALUE = 60, 600, 120, 40, 2000
TOURS_DIR = "tours"


class TourError(ValueError):
    """A tour file or id that cannot be used; the message is meant for people."""


@dataclass(frozen=True)
class Scene:
    page: str  # a page's url_path ("" for Home)
    params: dict[str, str]
    note: str = ""


@dataclass(frozen=True)
class Tour:
    title: str
    scenes: tuple[Scene, ...]

    def to_json(self) -> str:
        return json.dumps({"title": self.title, "scenes": [asdict(s) for s in self.scenes]}, indent=1)


def parse_tour(text: str | bytes, pages: set[str]) -> Tour:
    """A tour from JSON {"title": str, "scenes": [{"page", "params", "note"}, ...]} whose
    pages are among `pages`; a TourError naming the first thing wrong otherwise."""
    if len(text) > MAX_TOUR_BYTES:
        raise TourError(f"the tour file is {len(text):,} bytes; at most {MAX_TOUR_BYTES:,}")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TourError(f"the tour file is not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("scenes"), list):
        raise TourError('a tour is a JSON object with a "scenes" list')
    title = data.get("title", "")
    if not isinstance(title, str) or len(title) > MAX_TITLE:
        raise TourError(f"the title must be text of at most {MAX_TITLE} characters")
    if not 1 <= len(data["scenes"]) <= MAX_SCENES:
        raise TourError(f"a tour has 1 to {MAX_SCENES} scenes, this one {len(data['scenes'])}")
    return Tour(title, tuple(_scene(s, k + 1, pages) for k, s in enumerate(data["scenes"])))


def _scene(raw: object, k: int, pages: set[str]) -> Scene:
    if not isinstance(raw, dict):
        raise TourError(f"scene {k} is not an object")
    page, params, note = raw.get("page"), raw.get("params", {}), raw.get("note", "")
    if page not in pages:
        raise TourError(f"scene {k}: unknown page {str(page)[:40]!r} (pages: {', '.join(sorted(pages))})")
    if not isinstance(params, dict) or len(params) > MAX_PARAMS:
        raise TourError(f"scene {k}: params must be an object of at most {MAX_PARAMS} entries")
    if not all(isinstance(v, str | int | float | bool) and len(str(v)) <= MAX_VALUE for v in params.values()):
        raise TourError(f"scene {k}: each parameter is a text or a number of at most {MAX_VALUE} characters")
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise TourError(f"scene {k}: the note must be text of at most {MAX_NOTE} characters")
    shown = {str(key): str(v).lower() if isinstance(v, bool) else str(v) for key, v in params.items()}
    return Scene(str(page), shown, note)


def is_tour_id(text: str) -> bool:
    return bool(TOUR_ID_PATTERN.match(text))


def save_tour(tour: Tour, root: Path | None = None) -> str:
    """Store a recorded tour box-wide; returns its id (the only handle, like a run id)."""
    tour_id = "tour-" + secrets.token_hex(12)
    folder = Path(root if root is not None else settings.runs_dir()) / TOURS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{tour_id}.json").write_text(tour.to_json(), encoding="utf-8")
    return tour_id


def load_saved_tour(tour_id: str, pages: set[str], root: Path | None = None) -> Tour:
    """A saved tour by its id; a TourError for a malformed or unknown id or a damaged file."""
    if not is_tour_id(tour_id):
        raise TourError(f"{tour_id[:40]!r} is not a tour name or id")
    path = Path(root if root is not None else settings.runs_dir()) / TOURS_DIR / f"{tour_id}.json"
    if not path.is_file():
        raise TourError(f"no tour {tour_id} is stored on this server")
    return parse_tour(path.read_bytes(), pages)
