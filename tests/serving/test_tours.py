"""Tour files (serving.tours): what a good one holds, what a bad one is told, and a recorded
tour saved and opened by its id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attention_lab.serving.tours import (
    Scene,
    Tour,
    TourError,
    is_tour_id,
    load_saved_tour,
    parse_tour,
    save_tour,
)

PAGES = {"", "gpt", "reversal", "basics"}


def tour_text(**changes: object) -> str:
    data: dict = {
        "title": "t",
        "scenes": [{"page": "reversal", "params": {"text": "abc", "layer": 1}, "note": "n"}],
    }
    data.update(changes)
    return json.dumps(data)


def test_a_tour_reads_its_scenes_with_text_parameters() -> None:
    tour = parse_tour(tour_text(), PAGES)
    assert tour == Tour("t", (Scene("reversal", {"text": "abc", "layer": "1"}, "n"),))
    assert parse_tour(tour.to_json(), PAGES) == tour  # a saved tour reads back the same


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not json", "not JSON"),
        ("[]", '"scenes" list'),
        (tour_text(scenes=[]), "1 to 60 scenes"),
        (tour_text(scenes=[{"page": "nowhere"}]), "scene 1: unknown page 'nowhere'"),
        (tour_text(scenes=[{"page": "gpt", "params": {"text": "x" * 3000}}]), "scene 1: each parameter"),
        (tour_text(scenes=[{"page": "gpt", "params": {"a": ["list"]}}]), "scene 1: each parameter"),
        (tour_text(scenes=[{"page": "gpt", "note": "n" * 700}]), "scene 1: the note"),
        (tour_text(scenes=["gpt"]), "scene 1 is not an object"),
        (tour_text(title=5), "the title"),
        ("x" * 300_000, "at most 262,144"),
    ],
)
def test_a_bad_tour_file_is_told_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(TourError, match=says.replace("(", r"\(")):
        parse_tour(text, PAGES)


def test_a_recorded_tour_is_saved_under_an_unguessable_id(tmp_path: Path) -> None:
    tour = Tour("mine", (Scene("gpt", {"text": "hi"}, "first"), Scene("", {}, "")))
    ids = {save_tour(tour, tmp_path) for _ in range(3)}
    assert len(ids) == 3 and all(is_tour_id(i) and len(i) == 5 + 24 for i in ids)  # 96 random bits each
    assert all(load_saved_tour(i, PAGES, tmp_path) == tour for i in ids)
    for bad, says in (("tour-" + "0" * 24, "no tour"), ("../../etc/passwd", "not a tour name or id")):
        with pytest.raises(TourError, match=says):
            load_saved_tour(bad, PAGES, tmp_path)
