"""A server without static serving gets every chart module bundled into one script
(lab.chart_component.bundled): that script must load and draw in the browser, as the
modules served one by one do."""

from __future__ import annotations

import numpy as np
import pytest
from lab import chart_component, charts
from playwright.sync_api import Browser


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
