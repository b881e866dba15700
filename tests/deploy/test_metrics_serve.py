"""deploy/serve.sh --metrics-port M: the admin's figures as Prometheus metrics on
127.0.0.1:M, counting the page runs of every app process of the box."""

from __future__ import annotations

import os
import re
from pathlib import Path

from attention_lab.serving.page_stats import PageCounter
from tests.support.serve import free_port, in_own_loop, scrape, start_serve, stop_serve, streamlit_session

PORTS = re.compile(r"starting \d+ app processes on 127\.0\.0\.1 ports ([\d ]+)")


def test_metrics_count_the_page_runs_of_both_app_processes(tmp_path: Path) -> None:
    runs, metrics_port = tmp_path / "runs", free_port()
    env = {**os.environ, "ATTENTION_LAB_DEVICE": "cpu", "ATTENTION_LAB_RUNS_DIR": str(runs)}
    served = start_serve(tmp_path, env, 2, ("--metrics-port", str(metrics_port)))
    try:
        output = "".join(served.output)
        assert f"Prometheus metrics on http://127.0.0.1:{metrics_port}/metrics" in output
        app_ports = PORTS.search(output).group(1).split()
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        assert scrape(url)["attention_lab_page_runs_total", ()] == 0
        for port in app_ports:  # one page run on each app process, straight to its port
            _, exceptions, _ = in_own_loop(streamlit_session(f"http://127.0.0.1:{port}", "", "/basics"))
            assert exceptions == []
        found = scrape(url)
        assert found["attention_lab_page_runs_total", ()] == 2
        assert found["attention_lab_page_errors_total", ()] == 0
        assert found["attention_lab_runs", (("status", "running"),)] == 0
        assert len({p.pid for p in PageCounter(runs).figures().processes}) == 2  # both processes counted
    finally:
        stop_serve(served)
    assert served.proc.returncode == 0
