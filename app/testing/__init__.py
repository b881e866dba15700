"""Drive a running lab as a browser would, without one: the Streamlit websocket protocol client
that tests and benchmarks share."""
