"""Every page's prepared link loads none of Streamlit's heavy lazy chunks (the data grid and
Arrow formatting of st.dataframe, KaTeX of st.latex, plotly.js, vega): Streamlit shows
nothing below a page's title until every chunk the page needs has arrived, so one such
element anywhere held back the first chart by 0.4-0.6 s (2.7 s for plotly.js) on the 2-core
box. The lab's charts are app/static/charts.js, its tables plain HTML (attention_lab.frame.tables)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page

from tests.support.browser import PREPARED_LINKS, open_page

#: chunk names; st.metric's 0.8 kB loadVegaEmbed (its unused sparkline's loader) is not one
HEAVY = re.compile(r"dataframe|arrowformatutils|katex|plotly|(?<!load)vega", re.IGNORECASE)


@pytest.mark.parametrize("link", PREPARED_LINKS)
def test_a_prepared_link_loads_no_heavy_chunk(page: Page, app_url: str, link: str) -> None:
    scripts: list[str] = []
    page.on("request", lambda r: scripts.append(r.url) if r.resource_type == "script" else None)
    open_page(page, app_url + link)
    page.wait_for_timeout(1500)  # lazy chunks of elements drawn after the run
    assert len(scripts) > 10  # Streamlit's own bundle was seen, so the listener works
    heavy = [u for u in scripts if HEAVY.search(u.rsplit("/", 1)[-1])]
    assert not heavy, heavy
