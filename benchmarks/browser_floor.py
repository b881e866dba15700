"""The floor under every page: a bare Streamlit page for `bench_browser.py --floor`.

A title, then the elements named in ?with= (comma-separated, in that order), then one 12 x 12
attention map drawn by app/static/charts.js, as on the lab's pages. What it measures is what
Streamlit itself costs a page on this machine, whatever the lab's pages do on top.
"""

import numpy as np
import streamlit as st

from attention_lab.charts import component
from attention_lab.charts import (
    specs as charts,  # app/ on PYTHONPATH: bench_browser.py serves a copy next to app/static
)

ELEMENTS = {
    "caption": lambda: st.caption("A caption under the title, as every page has."),
    "selectbox": lambda: st.selectbox("Checkpoint", ["reverse-sinusoidal", "reverse-rope"]),
    "text_input": lambda: st.text_input("Text", "attention"),
    "toggle": lambda: st.toggle("A switch"),
    "number_input": lambda: st.number_input("A number", 0, 10, 3),
    "slider": lambda: st.slider("A slider", 0, 10, 3),
}

st.set_page_config(layout="wide")
st.title("Floor")
for name in st.query_params.get("with", "").split(","):
    if name in ELEMENTS:
        ELEMENTS[name]()
tokens = list("heads attend")  # 12 tokens
weights = np.random.default_rng(0).dirichlet(np.ones(len(tokens)), size=len(tokens))
component.show(charts.head_spec(weights, tokens, tokens, title="one map"), key="map")
