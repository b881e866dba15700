"""What every lesson page (/basics, /positions, /variance) does the same way: range checks
for its link values and a chart writer under the page's key prefix."""

from __future__ import annotations

from collections.abc import Callable

from attention_lab.charts import component


def in_range(lo: float, hi: float) -> Callable[[float], bool]:
    """A `valid` check for state.init_state: a link's value must lie in [lo, hi]."""
    return lambda v: lo <= v <= hi


def chart_writer(prefix: str) -> Callable[[dict, str], None]:
    """chart(spec, key) for a page: mounts the chart under prefix + key, so pages never share a key."""

    def chart(spec: dict, key: str) -> None:
        component.show(spec, key=prefix + key)

    return chart
