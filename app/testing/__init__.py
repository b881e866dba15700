"""What tests and benchmarks share to drive and measure a lab, shipped like `streamlit.testing`:
it imports Streamlit, websockets and the standard library (and `fuzz` the lab's URL state),
never pytest.

- `protocol`: a browser tab without a browser, speaking Streamlit's websocket protocol;
- `tabs`: tabs that stay open (a class follower, a /train tab watching its run), the deep links;
- `servers`: free ports, the app started one way, its health check, a server's processes;
- `chromium`: the headless Chromium the browser tests and benchmarks launch;
- `apptest`: AppTest run as a server runs pages (one compile per script);
- `fuzz`: the pages' URL properties and Hypothesis strategies (the `test` extra) to fuzz them;
- `explore`: a class exploring on its own (each tab its own drawn input, then widget changes);
- `profiling`: the benchmark's per-page cProfile shim and what each part of a page run costs;
- `layout`: the code base's layout read with `ast`.

Why a package of the lab: tests may not import benchmarks nor benchmarks tests, and both need
one client, so that what a test checks is what a benchmark measures.
"""
