"""A server without static serving gets every chart module bundled into one script
(attention_lab.charts.script.bundled): that script must load and draw in the browser, as the
modules served one by one do."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import Browser

from attention_lab.charts import component as chart_component
from attention_lab.charts import specs as charts


def test_the_bundle_loads_in_chromium_and_draws_a_chart(
    browser: Browser, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        chart_component.st, "get_option", {"server.enableStaticServing": False, "server.baseUrlPath": ""}.get
    )
    bundle = chart_component.script()
    spec = charts.bars_spec(["x", "y"], {"share": np.array([0.25, 0.75])}, "bundled bars")
    context = browser.new_context(viewport={"width": 800, "height": 600})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content("<div id='host' style='width:600px'></div>")
        drawn = page.evaluate(
            """async ([code, spec]) => {
                const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
                const draw = (await import(url)).default;
                const parentElement = document.getElementById("host");
                draw({ data: spec, parentElement, setTriggerValue: () => {} });
                await new Promise((done) => setTimeout(done, 300));
                const chart = parentElement.querySelector(".lab-chart[data-drawn]");
                const canvas = chart && chart.querySelector("canvas");
                return canvas ? [canvas.width > 0, canvas.getAttribute("aria-label")] : null;
            }""",
            [bundle, spec],
        )
    finally:
        context.close()
    assert errors == []
    assert drawn is not None and drawn[0] and "bundled bars" in drawn[1]


def test_round_ticks_are_whole_multiples_of_their_step(browser: Browser) -> None:
    """A diverging colour bar over [-0.2, 0.2] was ticked "-2.78e-17" where 0 belongs: the ticks
    were summed step by step. axes.js runs here as the browser runs it."""
    from pathlib import Path

    code = (Path(chart_component.__file__).parents[1] / "static" / "charts" / "axes.js").read_text()
    page = browser.new_page()
    try:
        ticks = page.evaluate(
            """async (code) => {
                const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
                const axes = await import(url);
                const ticks = (t) => t.ticks;
                const all = [axes.niceTicks(-0.2, 0.2), axes.fixedTicks(-0.3, 0.7), axes.niceTicks(0, 1)];
                return all.map(ticks);
            }""",
            code,
        )
    finally:
        page.close()
    assert ticks[0] == [-0.2, -0.1, 0, 0.1, 0.2]
    assert ticks[1] == [-0.2, 0, 0.2, 0.4, 0.6]
    assert ticks[2] == [0, 0.2, 0.4, 0.6, 0.8, 1]
