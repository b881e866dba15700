"""Memory of one training run's process, per task and size: the sizing figures for
deploy/multihost/README.md.

    python benchmarks/bench_run_memory.py [--seconds 20] [--sizes tiny,small,medium] [--device cpu]

Each run is submitted to a fresh on-disk queue in a temp folder (the same worker code the
Redis workers run), trains for --seconds, then is stopped; the worker's RSS is sampled
every 0.1 s from /proc, and on CUDA the peak allocated memory comes from the run's log.
Prints one line per (task, size): parameters, peak RSS, tokens/s while measured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from safetensors.numpy import load_file

from attention_lab.serving import RunRequest
from attention_lab.serving.sqlite_store import SQLiteRunStore
from transformer_core.train import TASKS


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure(queue: SQLiteRunStore, task: str, size: str, device: str, seconds: float) -> dict[str, float]:
    optim = TASKS[task].optim
    train = dict(task=task, steps=optim.steps, batch_size=optim.batch_size, device=device)
    positions = TASKS[task].positions or "rope"
    run_id = queue.submit(RunRequest(train=train, positions=positions, size=size, label="memory"))
    pid, peak, start = None, 0.0, time.monotonic()
    while time.monotonic() - start < seconds + 30:
        queue.dispatch()
        info = queue.info(run_id)
        if info is not None and info.pid and pid is None:
            pid, start = info.pid, time.monotonic()
        if pid:
            peak = max(peak, rss_mb(pid))
            if time.monotonic() - start >= seconds:
                break
        time.sleep(0.1)
    queue.stop(run_id)
    while (info := queue.info(run_id)) is not None and info.active:
        time.sleep(0.1)
    lines = [json.loads(s) for s in (queue.folder(run_id) / "progress.jsonl").read_text().splitlines()]
    steps = [r for r in lines if r.get("kind") == "step"]
    rate = steps[-1].get("tokens_per_s", float("nan")) if steps else float("nan")
    weights = queue.folder(run_id) / "model.safetensors"  # the stopped run is saved
    params = sum(a.size for a in load_file(str(weights)).values()) if weights.exists() else 0
    return {"peak_rss_mb": peak, "tokens_per_s": rate, "parameters": params}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--sizes", default="tiny,small,medium")
    parser.add_argument("--tasks", default="reverse,lm")
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; one run process per run; {args.seconds:.0f} s per run")
    print(f"{'task':<10}{'size':<8}{'parameters':>12}{'peak RSS MB':>13}{'tokens/s':>10}")
    with tempfile.TemporaryDirectory() as root:
        queue = SQLiteRunStore(root=Path(root), max_running=1)
        for task in args.tasks.split(","):
            for size in args.sizes.split(","):
                if size not in TASKS[task].sizes:
                    continue
                m = measure(queue, task, size, args.device, args.seconds)
                print(
                    f"{task:<10}{size:<8}{m['parameters']:>12}{m['peak_rss_mb']:>13.0f}{m['tokens_per_s']:>10.0f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
