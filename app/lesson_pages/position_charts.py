"""Charts of the positional-encoding lesson (/positions) as attention_lab.charts.specs specs: encoding
tables, waves, similarities, the RoPE pair's path, ALiBi's slopes and T5's biases. Numbers arrive
computed (lessons.positions); colours are the lesson pages' (attention_lab.lesson_pages.lesson_charts)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from attention_lab.charts import specs as charts
from attention_lab.charts import xy_charts
from attention_lab.lesson_pages.lesson_charts import FIRST, Spec
from attention_lab.lessons.positions import T5Biases


def _numbered(n: int) -> list[str]:
    return [str(i) for i in range(n)]


def pe_heatmap(table: np.ndarray, title: str, *, seen: int | None = None, zabs: float = 1.0) -> Spec:
    """A position table (P, d) drawn with position across and dimension down (red above
    zero); `seen`: a dashed line after the last position training used."""
    table = np.asarray(table, dtype=np.float64)
    n_pos, dims = table.shape
    spec = charts.head_spec(
        table.T,
        _numbered(dims),
        _numbered(n_pos),
        title,
        zmin=-zabs,
        zmax=zabs,
        value_name="value",
        colorscale="RdBu_r",
        height=380,
        x_marker=(seen, "never seen in training →") if seen is not None and seen < n_pos else None,
        quantized=True,
        file=title.split(":")[0].replace(" ", "_") or "positions",
    )
    spec.update(x_title="position", y_title="dimension", x_angle=0, tick_px=11)
    spec.update(x_every=charts.label_step(n_pos, 700, 26), y_every=charts.label_step(dims, 280, 11))
    return spec


def waves_chart(table: np.ndarray, dims: Sequence[int]) -> Spec:
    """Chosen dimensions of a position table as functions of position."""
    positions = np.arange(table.shape[0])
    return xy_charts.xy_spec(
        [
            xy_charts.panel(
                [
                    xy_charts.line(
                        f"dim {d} ({'sin' if d % 2 == 0 else 'cos'})",
                        positions,
                        table[:, d],
                        **xy_charts.look(i),
                    )
                    for i, d in enumerate(dims)
                ],
                x_title="position",
                y_title="value",
                y_range=(-1.1, 1.1),
                end_labels=len(dims) > 1,
            )
        ],
        title="chosen dimensions as waves",
        height=340,
        file="sinusoid_waves",
    )


def similarity_heatmap(matrix: np.ndarray, title: str) -> Spec:
    """Cosine similarity (P, P) of every pair of positions, red = alike."""
    n = len(matrix)
    spec = charts.head_spec(
        np.asarray(matrix, dtype=np.float64),
        _numbered(n),
        _numbered(n),
        title,
        zmin=-1.0,
        zmax=1.0,
        value_name="cosine",
        colorscale="RdBu_r",
        height=420,
        quantized=True,
        file="position_similarity",
    )
    spec.update(x_title="position", y_title="position", x_angle=0, tick_px=11)
    spec.update(x_every=charts.label_step(n, 300, 26), y_every=charts.label_step(n, 320, 11))
    return spec


def lines_chart(
    series: dict[str, np.ndarray],
    title: str,
    *,
    x_title: str = "position p",
    y_title: str = "",
    y_range: tuple[float, float] | None = None,
    marker_x: float | None = None,
    marker_text: str = "",
    height: int = 340,
) -> Spec:
    """Several named 1-D curves over positions 0, 1, ...; marker_x: a dashed
    line there, named marker_text."""
    return xy_charts.xy_spec(
        [
            xy_charts.panel(
                [
                    xy_charts.line(name, np.arange(len(y)), y, **xy_charts.look(i))
                    for i, (name, y) in enumerate(series.items())
                ],
                x_title=x_title,
                y_title=y_title,
                y_range=y_range,
                vlines=[] if marker_x is None else [(marker_x, marker_text)],
                end_labels=len(series) > 1,
            )
        ],
        title=title,
        height=height,
        file=title.split(":")[0].replace(" ", "_") or "curves",
    )


def rope_path_chart(path: np.ndarray, positions: Sequence[int], radians_per_step: float) -> Spec:
    """Arrows from the origin to a 2-D pair rotated to each position, on its circle."""
    path = np.asarray(path, dtype=np.float64)
    reach = float(np.abs(path).max()) * 1.25 or 1.0
    theta = np.linspace(0, 2 * np.pi, 200)
    radius = float(np.linalg.norm(path[0]))
    circle = xy_charts.line(
        "", radius * np.cos(theta), radius * np.sin(theta), color="#d1d5db", dash="dot", legend=False
    )
    circle["hover"] = False
    return xy_charts.xy_spec(
        [
            xy_charts.panel(
                [
                    circle,
                    xy_charts.arrows(path[:, 0], path[:, 1], color=FIRST),
                    xy_charts.points(
                        "",
                        path[:, 0],
                        path[:, 1],
                        color=FIRST,
                        sizes=[9] * len(path),
                        labels=[f"p={p}" for p in positions],
                    ),  # fmt: skip
                ],
                x_title="first coordinate of the pair",
                y_title="second coordinate",
                x_range=(-reach, reach),
                y_range=(-reach, reach),
                equal=True,
            )
        ],
        title=f"the pair turns {radians_per_step:.4f} rad per position",
        height=440,
        digits=3,
        file="rope_pair",
    )


def slopes_chart(slopes: np.ndarray) -> Spec:
    """ALiBi's slope per head, each written (turned) above its bar."""
    return charts.bars_spec(
        [f"head {h}" for h in range(len(slopes))],
        {"slope m": np.asarray(slopes)},
        "slope per head",
        height=380,
        y_title="slope m",
        colors=[FIRST],
        y_range=(0.0, max(float(np.max(slopes)), 1e-9) * 1.6),
        values_shown="{:.4g}",
        values_turned=True,
        digits=5,
        width_px=200,
        file="alibi_slopes",
    )


def t5_bias_chart(biases: T5Biases, where: str) -> Spec:
    """Each head's learned T5 bias over the distance j - i, one curve per head."""
    heads = [f"head {h}" for h in range(len(biases.bias))]
    frame = pd.DataFrame(biases.bias.T, index=biases.distances, columns=heads)
    return xy_charts.frame_lines(
        frame,
        x_title="distance j − i (key − query)",
        y_title=f"{where}: bias added to the score",
        height=300,
        file=f"t5_bias_{where}",
    )
