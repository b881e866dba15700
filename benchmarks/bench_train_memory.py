"""Memory of the app processes while /train sessions watch trainings.

    python benchmarks/bench_train_memory.py [--target single|serve] [--workers 2] [--trainings 2]
        [--duration 60] [--every 5]

Starts the app (one `streamlit run`, or deploy/serve.sh with --workers processes) on a
free loopback port with a temporary ATTENTION_LAB_RUNS_DIR, opens every deep link once in
every app process (warm-up), then starts --trainings runs on /train over Streamlit's own
protocol (benchmarks/bench_load.py's simulated browser) and keeps those sessions watching:
they answer the live panel's auto-reruns as an open tab does. Every --every seconds it
prints the resident memory of the app processes (the Streamlit servers, nginx and
serve.sh) apart from the training run processes (`serving.run_process`,
children of the app process that spawned them, so a plain "sum over the process tree"
counts them as the server's), the app processes' CPU use since the last sample (% of one
core: what watching costs the web processes, with no other users), and the training steps
the watching pages have seen. At the
end the watching tabs close and the app's RSS is printed once more.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path

from bench_load import started

from attention_lab.testing.servers import Server, descendants, is_training_worker, rss_kb
from attention_lab.testing.tabs import start_trainings, warm_up


def split_rss_mb(server: Server) -> tuple[float, float, int]:
    """(app processes' RSS MB, training workers' RSS MB, number of workers) under the server."""
    assert server.proc is not None
    app = workers = 0
    count = 0
    for pid in descendants(server.proc.pid):
        if is_training_worker(pid):
            workers += rss_kb(pid)
            count += 1
        else:
            app += rss_kb(pid)
    return app / 1024, workers / 1024, count


async def measure(server: Server, args: argparse.Namespace) -> None:
    await warm_up(server.base, server.workers, 60.0)
    app0, _, _ = split_rss_mb(server)
    print(f"{'t s':>6} {'app RSS MB':>11} {'app CPU %':>10} {'workers RSS MB':>15} {'workers':>8} "
          f"{'steps seen':>11}", flush=True)  # fmt: skip
    print(f"{0:>6.0f} {app0:>11.0f} {'':>10} {0:>15.0f} {0:>8}", flush=True)
    watchers = await start_trainings(server.base, args.trainings, 60.0)
    t0 = last = time.monotonic()
    cpu_last, cpu_total, cpu_first = server.cpu_seconds(), 0.0, server.cpu_seconds()
    try:
        while time.monotonic() - t0 < args.duration:
            await asyncio.sleep(args.every)
            app, work, count = split_rss_mb(server)
            cpu, now = server.cpu_seconds(), time.monotonic()
            share, cpu_last, last = 100 * (cpu - cpu_last) / (now - last), cpu, now
            cpu_total = cpu - cpu_first
            seen = sum(max(w.steps, default=0) for w in watchers)
            line = f"{now - t0:>6.0f} {app:>11.0f} {share:>10.1f} {work:>15.0f} {count:>8} {seen:>11}"
            print(line, flush=True)
            for w in watchers:
                for e in w.errors[:3]:
                    print(f"    training error: {e}", flush=True)
                w.errors.clear()
        watched = time.monotonic() - t0
        print(f"app CPU while watching: {cpu_total:.1f} s in {watched:.0f} s "
              f"({100 * cpu_total / watched:.1f}% of one core)", flush=True)  # fmt: skip
    finally:
        await asyncio.gather(*(w.stop(60.0) for w in watchers))
        server.run_ids.extend(w.run_id for w in watchers if w.run_id)
    await asyncio.sleep(2)
    app, _, _ = split_rss_mb(server)
    print(f"app RSS {app0:,.0f} MB before the trainings, {app:,.0f} MB after the watching tabs stopped them "
          f"(+{app - app0:,.0f} MB)", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=["single", "serve"], default="single")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="for serve.sh")
    parser.add_argument("--trainings", type=int, default=2)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of watching")
    parser.add_argument("--every", type=float, default=5.0, help="seconds between RSS samples")
    args = parser.parse_args()
    what = f"{args.trainings} trainings watched for {args.duration:.0f} s"
    print(f"{os.cpu_count()} cores; {args.target}; {what}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-train-memory-") as tmp:
        with started(args.target, args.workers, Path(tmp)) as server:
            asyncio.run(measure(server, args))


if __name__ == "__main__":
    main()
