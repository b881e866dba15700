"""Tables as plain HTML in the page (st.html), for every page's numbers.

Why not st.dataframe: its grid and Arrow decoding are ~1.7 MB of lazily loaded JS, and
Streamlit shows nothing below a page's title until every lazy chunk the page needs has
arrived, so one table anywhere held back the first map by 0.4-0.6 s on the 2-core box
(paired browser runs, session 6). These tables are a few kB of HTML: numbers right-aligned
in tabular figures, a dash where a value does not apply, optional in-cell bars (a share
such as a probability), and long tables scroll inside a bounded height.

`show(frame, key=...)` writes the table inside `<div class="lab-table" data-key=key>`: the
key names it for tests and CSS, as a widget key would. The tables' style is sent once per
run by the router (`style()`, app/Home.py), not with every table (13 of them on /basics).
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

# Colours are mixed from the page's own text colour and the theme's canvas (the app sets
# color-scheme), so tables read in the light, the dark and a custom theme alike.
CSS = """<style>
.lab-table { overflow: auto; margin: 0 0 0.5rem 0; border-radius: 0.5rem;
  border: 1px solid color-mix(in srgb, currentColor 14%, transparent); }
.lab-table table { border-collapse: collapse; width: 100%; font-size: 0.875rem;
  font-variant-numeric: tabular-nums; }
.lab-table th, .lab-table td { padding: 0.25rem 0.6rem;
  border-bottom: 1px solid color-mix(in srgb, currentColor 10%, transparent);
  white-space: nowrap; text-align: left; }
.lab-table thead th { position: sticky; top: 0; background: color-mix(in srgb, currentColor 6%, Canvas);
  color: color-mix(in srgb, currentColor 80%, Canvas);
  font-weight: 500; white-space: normal; vertical-align: bottom; min-width: 3rem; }
.lab-table::-webkit-scrollbar { width: 8px; height: 8px; }  /* always shown: a wide table says it scrolls */
.lab-table::-webkit-scrollbar-thumb { background: color-mix(in srgb, currentColor 30%, transparent);
  border-radius: 4px; }
.lab-table tbody th { color: color-mix(in srgb, currentColor 78%, Canvas); font-weight: 400; }
.lab-table tr > :first-child { position: sticky; left: 0; z-index: 1;  /* a wide table keeps its row names */
  background: color-mix(in srgb, currentColor 3%, Canvas); }
.lab-table thead tr > :first-child { z-index: 2; background: color-mix(in srgb, currentColor 6%, Canvas); }
.lab-table td.num, .lab-table th.num { text-align: right; }
.lab-table td:not(.num):not(.bar), .lab-table tbody th { white-space: normal; min-width: 4rem; }  /* wraps */
@media (max-width: 640px) { .lab-table table { font-size: 0.8rem; }
  .lab-table th, .lab-table td { padding: 0.2rem 0.35rem; } }  /* a phone: more columns on screen */
.lab-table td.bar { min-width: 4.5rem; }
.lab-grid { display: grid; gap: 0.25rem 1rem;
  grid-template-columns: repeat(auto-fill, minmax(min(var(--min), 100%), 1fr)); }
.lab-grid > figure { margin: 0; min-width: 0; }
.lab-grid figcaption { font-weight: 600; margin: 0.4rem 0 0.3rem; }
.lab-table td.bar span { display: block; padding: 0 0.3rem; border-radius: 0.2rem; text-align: right;
  background: linear-gradient(90deg, rgba(28, 131, 225, 0.3) var(--share), transparent var(--share)); }
</style>"""
MISSING = "—"  # a value that does not apply (NaN, None)


def _text(value: Any, fmt: str | Callable[[Any], str] | None) -> str:
    """A cell's text: `fmt` ("{:.4f}" or a function) for numbers, up to 6 significant
    digits otherwise, yes/no for truth values, a dash for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating) and math.isinf(value):
        return "−∞" if value < 0 else "∞"  # a masked score
    if fmt is not None and isinstance(value, int | float | np.number):
        return fmt(value) if callable(fmt) else fmt.format(value)
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    return str(value)


@dataclass(frozen=True)
class Matrix:
    """A matrix with named rows and columns, as a table reads it: float cells, unrounded
    (`digits=` formats them). Built without pandas, which a lesson's many small q, k, v tables
    do not need."""

    values: list[list[float]]  # (rows, columns)
    rows: list[Any]
    columns: list[Any]

    @classmethod
    def of(cls, matrix: Any, rows: Sequence[Any], columns: Sequence[Any]) -> Matrix:
        """A (len(rows), len(columns)) array of numbers as a table."""
        values = np.asarray(matrix, dtype=float)
        if values.shape != (len(rows), len(columns)):
            raise ValueError(f"Matrix: {values.shape} values for {len(rows)} rows and {len(columns)} columns")
        return cls(values.tolist(), list(rows), list(columns))


_FLOAT64 = np.dtype(float)  # a Matrix's cells, as a frame of floats holds them


def _rows(frame: pd.DataFrame, dtypes: list[Any]) -> list[list[Any]]:
    """The frame's values row by row: a matrix of one numeric numpy dtype in one call (as
    Python numbers), any other frame a column at a time (each as pandas hands out its values)."""
    if dtypes and all(d == dtypes[0] for d in dtypes) and isinstance(dtypes[0], np.dtype):
        if dtypes[0].kind in "iuf":
            return frame.to_numpy().tolist()
    columns = [list(series) for _, series in frame.items()]
    return [list(row) for row in zip(*columns, strict=True)] if columns else [[]] * len(frame)


def to_html(
    frame: pd.DataFrame | Matrix,
    *,
    key: str,
    digits: int | None = None,
    formats: dict[str, str | Callable[[Any], str]] | None = None,
    bars: dict[str, tuple[float, float]] | None = None,
    index: bool = True,
    height: int | None = None,
) -> str:
    """The table's HTML: columns as headers, the index (when `index`) as row headers;
    digits: decimals of every float column; formats: column -> format of its numbers (over
    digits); bars: column -> (lo, hi), each value drawn as a bar of its share of that range
    behind its text; height: px before the table scrolls."""
    if isinstance(frame, Matrix):
        names, dtypes, labels, values = (
            frame.columns,
            [_FLOAT64] * len(frame.columns),
            frame.rows,
            frame.values,
        )
    else:
        names, dtypes, labels = frame.columns.tolist(), frame.dtypes.tolist(), frame.index.tolist()
        values = _rows(frame, dtypes)
    kinds = {c: dtype.kind for c, dtype in zip(names, dtypes, strict=True)}
    floats = [c for c in names if kinds[c] == "f"] if digits is not None else []
    formats = {**dict.fromkeys(floats, f"{{:.{digits}f}}"), **(formats or {})}
    bars = bars or {}
    esc = html.escape
    numeric = {c: kinds[c] in "iuf" for c in kinds}
    head = ([("", False)] if index else []) + [(str(c), numeric[c] or c in bars) for c in names]
    rows = []
    for label, row in zip(labels, values, strict=True):
        cells = [f"<th>{esc(_text(label, None))}</th>"] if index else []
        for column, value in zip(names, row, strict=True):
            text = esc(_text(value, formats.get(column)))
            if column in bars and isinstance(value, int | float | np.number) and not math.isnan(value):
                lo, hi = bars[column]
                share = 100 * min(1.0, max(0.0, (float(value) - lo) / ((hi - lo) or 1.0)))
                cells.append(f'<td class="bar"><span style="--share:{share:.1f}%">{text}</span></td>')
            else:
                cells.append(f'<td class="num">{text}</td>' if numeric[column] else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    style = f' style="max-height:{int(height)}px"' if height else ""
    name = esc("Table of " + ", ".join(h for h, _ in head if h), quote=True)
    return (  # a region the keyboard can focus and scroll (WCAG 2.1.1), named by its columns
        f'<div class="lab-table" data-key="{esc(key)}" tabindex="0" role="region" aria-label="{name}"{style}>'
        "<table><thead><tr>"
        + "".join(f'<th class="num">{esc(h)}</th>' if right else f"<th>{esc(h)}</th>" for h, right in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></div>"
    )


def style() -> None:
    """Send the tables' CSS for this run (a style-only st.html takes no space on the page)."""
    st.html(CSS)


def show_many(
    tables: list[tuple[str, pd.DataFrame | Matrix, str, dict[str, Any]]],
    *,
    min_px: int = 300,
    where: Any = None,
) -> None:
    """Several titled tables, (title, frame, key, to_html options), side by side as room allows
    (each at least min_px wide), in one element: one message for a page's run, not two a table."""
    figures = "".join(
        f"<figure><figcaption>{html.escape(title)}</figcaption>{to_html(frame, key=key, **options)}</figure>"
        for title, frame, key, options in tables
    )
    (where or st).html(f'<div class="lab-grid" style="--min: {int(min_px)}px">{figures}</div>')


def show(frame: pd.DataFrame | Matrix, *, key: str, where: Any = None, **options: Any) -> None:
    """Write `frame` as an HTML table (options: see `to_html`) in `where` (a column or
    container), else the page; its look comes from `style()`, sent once per run."""
    (where or st).html(to_html(frame, key=key, **options))
