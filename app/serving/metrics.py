"""The admin's figures (`serving.admin`) as Prometheus metrics, on a loopback port:

    python -m attention_lab.serving.metrics --port 9464      # deploy/serve.sh --metrics-port 9464 starts it

Every scrape reads the figures afresh (nothing is kept between scrapes), so any number of
exporters, app processes and run processes agree. Listens on 127.0.0.1 only: a Prometheus
on another host scrapes through a tunnel or a proxy of the admin's choosing
(deploy/prometheus.yml is a sample scrape config).
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable, Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

import attention_lab.serving.settings as settings
from attention_lab.serving.admin import Figures, collect
from attention_lab.serving.backends import open_run_store
from attention_lab.serving.page_stats import RATE_MINUTES, PageCounter
from transformer_core.errors import ConfigError

ADDRESS = "127.0.0.1"


class FiguresCollector(Collector):
    """Metrics from `figures()`, read at each scrape."""

    def __init__(self, figures: Callable[[], Figures]) -> None:
        self.figures = figures

    def collect(self) -> Iterator[Metric]:
        f = self.figures()
        runs = GaugeMetricFamily("attention_lab_runs", "Runs in the run store by status", labels=["status"])
        for status, count in f.counts.items():
            runs.add_metric([status], count)
        yield runs
        yield GaugeMetricFamily(
            "attention_lab_runs_max_running", "Runs that may train at once", value=f.max_running
        )
        yield GaugeMetricFamily(
            "attention_lab_runs_disk_bytes", "Bytes used by the run folders", value=f.disk_bytes
        )
        yield GaugeMetricFamily(
            "attention_lab_runs_disk_budget_bytes",
            "The run folders' budget (finished runs are deleted past it)",
            value=f.disk_budget_bytes,
        )
        yield CounterMetricFamily(
            "attention_lab_page_runs", "Page runs by every app process of the box", value=f.pages.runs_total
        )
        yield CounterMetricFamily(
            "attention_lab_page_errors", "Page runs that raised an exception", value=f.pages.errors_total
        )
        yield GaugeMetricFamily(
            "attention_lab_page_runs_per_minute",
            f"Page runs per minute over the last {RATE_MINUTES} minutes",
            value=f.pages.runs_per_minute,
        )
        yield GaugeMetricFamily(
            "attention_lab_page_errors_per_minute",
            f"Page errors per minute over the last {RATE_MINUTES} minutes",
            value=f.pages.errors_per_minute,
        )
        yield gpu_memory(f)


def gpu_memory(f: Figures) -> GaugeMetricFamily:
    """GPU memory per process: each training run's and each app process's (none without a GPU)."""
    gpu = GaugeMetricFamily(
        "attention_lab_gpu_memory_bytes",
        "GPU memory held by a process (role: run or app)",
        labels=["pid", "role", "run"],
    )
    for row in f.runs:
        if row.info.active and row.progress.gpu_bytes is not None:
            gpu.add_metric([str(row.info.pid or ""), "run", row.info.id], row.progress.gpu_bytes)
    for proc in f.pages.processes:
        if proc.gpu_bytes is not None:
            gpu.add_metric([str(proc.pid), "app", ""], proc.gpu_bytes)
    return gpu


def registry_for(figures: Callable[[], Figures]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FiguresCollector(figures))
    return registry


def serve(port: int) -> tuple[WSGIServer, threading.Thread]:
    """The exporter of this box's figures on 127.0.0.1:`port` (0: a free port), in a thread."""
    store = open_run_store(settings.runs_dir())
    counter = PageCounter(settings.runs_dir())
    return start_http_server(port, addr=ADDRESS, registry=registry_for(lambda: collect(store, counter)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m attention_lab.serving.metrics", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--port", type=int, required=True, help="loopback port to serve /metrics on")
    args = parser.parse_args(argv)
    if not 1 <= args.port <= 65535:
        parser.error(f"--port must be 1-65535, got {args.port}")
    try:
        server, thread = serve(args.port)
    except (ConfigError, OSError) as e:
        print(f"attention_lab.serving.metrics: error: {e}", file=sys.stderr)
        return 2
    print(f"attention_lab.serving.metrics: http://{ADDRESS}:{server.server_port}/metrics", flush=True)
    thread.join()  # until SIGTERM/SIGINT ends the process
    return 0


if __name__ == "__main__":
    sys.exit(main())
