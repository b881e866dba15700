"""The serving layer's command: `python -m transformer_core worker`, a training worker for
the Redis run queue. Registered as a `transformer_core.commands` entry point, so the
library's command line offers it without importing the serving layer."""

from __future__ import annotations

import argparse

import attention_lab.serving.settings as settings
from transformer_core.cli import Command
from transformer_core.device import DEVICE_CHOICES
from transformer_core.errors import ConfigError


def worker_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--device", choices=DEVICE_CHOICES, default="auto")
    sp.add_argument("--redis", default=None, metavar="URL", help=f"default: ${settings.REDIS_URL_ENV}")


def run_worker(args: argparse.Namespace) -> None:
    from attention_lab.serving.redis_worker import serve_worker

    url = args.redis or settings.redis_url()
    if not url:
        raise ConfigError(f"worker: give --redis redis://host:port/db or set {settings.REDIS_URL_ENV}")
    serve_worker(url, args.device)


WORKER = Command(
    "worker",
    "a training worker for the Redis run queue (one run at a time)",
    worker_arguments,
    run_worker,
    description="Take runs from the Redis run queue and train them, one at a time, until stopped "
    "(SIGTERM/Ctrl+C stops and saves the current run). Start one per GPU on any host; the number "
    "of workers is the number of trainings at once.",
    json=False,
)
