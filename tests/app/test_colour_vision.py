"""Colour that survives colour-vision deficiencies (WCAG 1.4.1; issue 22 #5): series colours
stay apart and colour scales stay ordered under protan, deutan and tritan vision, simulated
with Machado, Oliveira and Fernandes' (2009) matrices at full severity, in linear RGB."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from attention_lab.charts.specs import COLORSCALES, MARKER_SHAPES, SERIES_COLORS

#: Machado et al. 2009, severity 1.0: linear RGB -> linear RGB as that eye sees it
DEFICIENCIES = {
    "protan": [[0.152286, 1.052583, -0.204868],
               [0.114503, 0.786281, 0.099216],
               [-0.003882, -0.048116, 1.051998]],
    "deutan": [[0.367322, 0.860646, -0.227968],
               [0.280085, 0.672501, 0.047413],
               [-0.011820, 0.042940, 0.968881]],
    "tritan": [[1.255528, -0.076749, -0.178779],
               [-0.078411, 0.930809, 0.147602],
               [0.004733, 0.691367, 0.303900]],
}  # fmt: skip
#: the smallest CIELAB distance (ΔE*ab) between two series colours under any deficiency: about
#: what tells two thin lines apart at a glance
APART = 15.0
#: Streamlit's own chart colours, which the lab used before: under deutan vision its pink and
#: light green fall 9 apart, so the check above can fail
STREAMLIT_COLORS = ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a"]
CHARTS_JS = Path(__file__).resolve().parents[2] / "app" / "static" / "charts" / "series.js"


def linear(rgb: np.ndarray) -> np.ndarray:
    """sRGB 0..255 -> linear light 0..1."""
    c = np.asarray(rgb, dtype=np.float64) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab(lin: np.ndarray) -> np.ndarray:
    """Linear RGB (..., 3) -> CIELAB (..., 3) under D65."""
    xyz = (
        np.clip(lin, 0, 1)
        @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    )
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], -1)


def seen(rgb: np.ndarray, deficiency: str | None) -> np.ndarray:
    """How colours (..., 3) in sRGB 0..255 look, in CIELAB, to an eye with `deficiency` (None: typical)."""
    lin = linear(rgb)
    return lab(lin if deficiency is None else lin @ np.array(DEFICIENCIES[deficiency]).T)


def rgb_of(colors: list[str], text: str) -> np.ndarray:
    """'#rrggbb' (or "text": the theme's text colour) -> (n, 3) sRGB."""
    return np.array(
        [[int(h[i : i + 2], 16) for i in (1, 3, 5)] for h in (text if c == "text" else c for c in colors)]
    )


def closest_pair(colors: list[str], deficiency: str, text: str = "#31333f") -> float:
    points = seen(rgb_of(colors, text), deficiency)
    return min(float(np.linalg.norm(a - b)) for a, b in itertools.combinations(points, 2))


@pytest.mark.parametrize("deficiency", sorted(DEFICIENCIES))
@pytest.mark.parametrize(
    "text", ["#31333f", "#fafafa"], ids=["light", "dark"]
)  # Streamlit's two text colours
def test_series_colours_stay_apart(deficiency: str, text: str) -> None:
    assert len(SERIES_COLORS) >= 8  # the /train head scores of a 2 x 4 model: eight curves
    assert closest_pair(SERIES_COLORS, deficiency, text) >= APART


def test_the_check_tells_a_confusable_palette() -> None:
    assert closest_pair(STREAMLIT_COLORS, "deutan") < APART


@pytest.mark.parametrize("deficiency", [None, *sorted(DEFICIENCIES)])
@pytest.mark.parametrize("name", sorted(COLORSCALES))
def test_colour_scales_stay_ordered(name: str, deficiency: str | None) -> None:
    """A sequential scale's lightness falls strictly from end to end; a diverging one's rises
    to its light middle and falls again, its two arms as seen still apart at every step."""
    stops = np.array([[int(v) for v in c.split(",")] for c in COLORSCALES[name]])
    lightness = seen(stops, deficiency)[:, 0]
    if name == "RdBu":
        middle = len(stops) // 2
        assert np.all(np.diff(lightness[: middle + 1]) > 0) and np.all(np.diff(lightness[middle:]) < 0)
        arms = seen(stops, deficiency)
        for i in range(middle):  # red and blue at equal distance from the middle
            assert np.linalg.norm(arms[i] - arms[-1 - i]) > 10, (i, deficiency)
    else:
        assert np.all(np.diff(lightness) < 0), lightness


def test_every_marker_shape_is_drawn() -> None:
    """Eight different shapes, each one the charts' shape() draws (an unknown one is a circle)."""
    assert len(set(MARKER_SHAPES)) == len(MARKER_SHAPES) == 8
    source = CHARTS_JS.read_text(encoding="utf-8")
    body = source[source.index("export function shape") : source.index("function curve")]
    drawn = set(re.findall(r'"([a-z-]+)"', body)) | set(re.findall(r"^\s+([a-z]+): \[\[", body, re.MULTILINE))
    assert set(MARKER_SHAPES) - {"circle"} <= drawn
