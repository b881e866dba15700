"""Many simultaneous users on one box: one Streamlit process vs deploy/serve.sh (nginx + N).

    python benchmarks/bench_load.py                                  # both targets, 1/5/20 users
    python benchmarks/bench_load.py --target serve --workers 2 --users 1,5,20,50 --duration 30
    python benchmarks/bench_load.py --target single --trainings 2    # with two trainings watched
    python benchmarks/bench_load.py --target serve --soak 600 --soak-users 20   # memory over time
    python benchmarks/bench_load.py --url http://127.0.0.1:8501      # a server already running
    python benchmarks/bench_load.py --target serve --redis-workers 2 --trainings 3   # Redis queue, 2 workers
    python benchmarks/bench_load.py --chaos --workers 2 --users 20   # kill -9 an app process (bench_chaos.py)

Each simulated user is one browser speaking Streamlit's own protocol: it opens a deep link
as a new tab does - GET the page's HTML (keeping the cookies nginx sets, so it stays on one
app process), open Streamlit's websocket (streamlit_private.STREAM), send a rerun_script BackMsg with the
page's url path and query string - and reads ForwardMsgs until script_finished. That
script run is what a page costs the server; the static JavaScript bundles a browser also
fetches once (and then caches) are not requested. Users loop over the deep links with no
think time (a closed loop: every user always has a page in flight), so `users` is the
number of page opens in flight at once. 60 students opening one link within a minute is
about one page open per second.

Printed per target and user count: pages run, p50/p95/max page time (HTML request to
script_finished), page runs/s, exceptions (Exception elements drawn on a page), errors
(HTTP errors, closed websockets, runs over --page-timeout), and the resident memory of
every process of the server (sum of RSS; for serve.sh: the app processes + nginx + the
script) before and after the step, and procs: how many app processes served the step
(from nginx's X-Upstream header; "-" without nginx). Every step is bounded by --duration seconds and
--max-pages page opens per user; the whole run starts and stops its own servers on free
loopback ports. Before measuring, every app process opens every deep link once (warm-up:
model loads and first compiles are not in the figures).

--trainings K starts K trainings on /train first (K sessions press Start, over the same
protocol), keeps those K sessions open and watching (they answer the page's auto-rerun
requests, as an open browser tab does) during every step, and reports how many training
steps the K runs advanced while each step ran. Trainings run in the box-wide queue's own
run processes (not in the RSS column). Servers started here get a temporary
ATTENTION_LAB_RUNS_DIR, and every training started here is stopped (Stop button, then the
queue) before the script ends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from attention_lab.testing.protocol import Browser, open_page
from attention_lab.testing.servers import (
    ROOT,
    Server,
    free_port,
    launched,
    rss_kb,
    streamlit_command,
    wait_healthy,
)
from attention_lab.testing.tabs import DEEP_LINKS, start_trainings, warm_up

# ---------------------------------------------------------------- a load step


@dataclass
class StepResult:
    """One load step's figures: page times, exceptions, errors, app processes, memory."""

    users: int
    times: list[float] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    upstreams: set[str] = field(default_factory=set)
    elapsed: float = 0.0
    rss_before_mb: float = 0.0
    rss_after_mb: float = 0.0
    training_steps: int | None = None


async def load_step(
    base: str, users: int, duration: float, max_pages: int, page_timeout: float, server: Server | None
) -> StepResult:
    """`users` closed-loop users over the deep links for `duration` s or `max_pages` pages each."""
    result = StepResult(users)
    result.rss_before_mb = server.rss_mb() if server else float("nan")
    stop_at = time.monotonic() + duration

    async def user(index: int) -> None:
        browser = Browser(base)
        links = itertools.islice(itertools.cycle(DEEP_LINKS), index, None)
        for _ in range(max_pages):
            if time.monotonic() >= stop_at:
                return
            link = next(links)
            try:
                page = await open_page(browser, link, page_timeout)
            except Exception as exc:  # noqa: BLE001 - counted and shown
                result.errors.append(f"{link}: {type(exc).__name__}: {exc}"[:300])
                continue
            result.times.append(page.seconds)
            result.exceptions.extend(f"{link}: {e}" for e in page.exceptions)
            if page.upstream:
                result.upstreams.add(page.upstream)

    started = time.perf_counter()
    await asyncio.gather(*(user(i) for i in range(users)))
    result.elapsed = time.perf_counter() - started
    result.rss_after_mb = server.rss_mb() if server else float("nan")
    return result


# ---------------------------------------------------------------- servers


@contextmanager
def redis_queue(workers: int, logdir: Path) -> Iterator[str | None]:
    """With --redis-workers N: Debian's redis-server on a free loopback port and N training
    workers (`python -m transformer_core worker --device cpu`); yields the Redis URL."""
    if not workers:
        yield None
        return
    port, folder = free_port(), logdir / "redis"
    folder.mkdir()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder), "--save", "",
         "--appendonly", "yes"],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    procs = []
    try:
        time.sleep(0.5)
        for i in range(workers):
            with open(logdir / f"worker-{i}.log", "wb") as out:
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "transformer_core",
                            "worker",
                            "--device",
                            "cpu",
                            "--redis",
                            url,
                        ],
                        cwd=ROOT,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )  # fmt: skip
                )
        yield url
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)  # the worker stops and saves its run
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        redis.terminate()
        redis.wait(timeout=30)


@contextmanager
def started(target: str, workers: int, logdir: Path) -> Iterator[Server]:
    """The lab as `target` ("single": one `streamlit run`, else serve.sh --workers N) on a free
    port with its runs under `logdir`; on leaving, the server stops, then the trainings started."""
    port = free_port()
    log = logdir / f"{target}.log"
    if target == "single":
        cmd, name, count = streamlit_command("app/Home.py", port), "streamlit run (1 process)", 1
    else:
        cmd = ["bash", "deploy/serve.sh", "--workers", str(workers), "--port", str(port)]
        name, count = f"deploy/serve.sh --workers {workers}", workers
    runs = logdir / f"runs-{target}"  # trainings started here never touch the repo's runs/
    env = {**os.environ, "PYTHON": sys.executable, "ATTENTION_LAB_RUNS_DIR": str(runs)}
    server = Server(name, f"http://127.0.0.1:{port}", count, runs=runs)
    try:
        with launched(cmd, log, env) as proc:
            server.proc = proc
            wait_healthy(server.base, proc, log)
            yield server
    finally:
        stop_trainings(runs, server.run_ids)


def queue_waits(runs: Path, run_ids: list[str]) -> str:
    """Each training's wait in the queue (submitted -> a worker took it), or its place."""
    from attention_lab.serving import open_run_store

    queue, now, parts = open_run_store(runs, 1), time.time(), []
    for i, info in enumerate(map(queue.info, run_ids), 1):
        if info is None:
            parts.append(f"run {i}: unknown")
        elif info.status == "queued":
            parts.append(f"run {i}: waiting {now - info.created:.1f} s (place {info.position})")
        else:
            parts.append(f"run {i}: waited {(info.started or now) - info.created:.1f} s ({info.status})")
    return "queue: " + "; ".join(parts)


def stop_trainings(runs: Path, run_ids: list[str], timeout: float = 30) -> None:
    """Training workers outlive the web server by design: stop the ones started here and
    wait for their processes to end (killed after `timeout` s)."""
    if run_ids and os.environ.get("ATTENTION_LAB_REDIS_URL"):
        from attention_lab.serving import open_run_store

        queue = open_run_store(runs)
        for run_id in run_ids:
            with contextlib.suppress(Exception):
                queue.stop(run_id)
        return  # the workers themselves are stopped by redis_queue()
    if not run_ids or not (runs / "queue.sqlite3").exists():
        return
    from attention_lab.serving.sqlite_store import SQLiteRunStore

    queue = SQLiteRunStore(runs, max_running=1)
    for run_id in run_ids:
        queue.stop(run_id)
    pids = [info.pid for info in map(queue.info, run_ids) if info and info.pid]
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        pids = [pid for pid in pids if os.path.exists(f"/proc/{pid}") and rss_kb(pid)]
        time.sleep(0.2)
    for pid in pids:
        print(f"    training worker {pid} did not stop within {timeout:.0f} s: killing it", flush=True)
        os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------- report


def pct(values: list[float], q: float) -> float:
    """The q-quantile of `values` (nearest rank; NaN for none)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


HEADER = (
    f"{'target':<30} {'train':>5} {'users':>5} {'pages':>5} {'p50 s':>7} {'p95 s':>7} {'max s':>7} "
    f"{'runs/s':>6} {'exc':>3} {'err':>3} {'RSS MB before→after':>20} {'procs':>5}"
)


def row(name: str, trainings: int, r: StepResult) -> str:
    """One step's line of the table (HEADER)."""
    rate = len(r.times) / r.elapsed if r.elapsed else 0.0
    rss = f"{r.rss_before_mb:,.0f}→{r.rss_after_mb:,.0f}"
    p50 = statistics.median(r.times) if r.times else float("nan")
    return (
        f"{name:<30} {trainings:>5} {r.users:>5} {len(r.times):>5} {p50:>7.3f} {pct(r.times, 0.95):>7.3f} "
        f"{max(r.times, default=float('nan')):>7.3f} {rate:>6.2f} {len(r.exceptions):>3} "
        f"{len(r.errors):>3} {rss:>20} {len(r.upstreams) or '-':>5}"
    )


async def bench_target(server: Server, args: argparse.Namespace) -> list[str]:
    """Warm up, start --trainings, then one load step per --users count (and the soak); the lines."""
    await warm_up(server.base, server.workers, args.page_timeout)
    watchers = await start_trainings(server.base, args.trainings, args.page_timeout) if args.trainings else []
    rows = []
    if watchers and server.runs is not None:
        await asyncio.sleep(3)  # let the workers take what they can
        print(queue_waits(server.runs, [w.run_id for w in watchers if w.run_id]), flush=True)
    try:
        for users in args.users:
            steps_before = sum(max(w.steps, default=0) for w in watchers)
            r = await load_step(server.base, users, args.duration, args.max_pages, args.page_timeout, server)
            line = row(server.name, args.trainings, r)
            if watchers:
                advanced = sum(max(w.steps, default=0) for w in watchers) - steps_before
                ended = sum(w.finished for w in watchers)
                line += f"  training steps +{advanced}" + (f" ({ended} run(s) ended)" if ended else "")
                for w in watchers:
                    line += "".join(f"\n    training error: {e}" for e in w.errors[:3])
                    w.errors.clear()
            print(line, flush=True)
            for message in (r.exceptions + r.errors)[:5]:
                print(f"    {message}", flush=True)
            rows.append(line)
        if args.soak:
            await soak(server, args)
    finally:
        await asyncio.gather(*(w.stop(args.page_timeout) for w in watchers))
        server.run_ids.extend(w.run_id for w in watchers if w.run_id)
    return rows


async def soak(server: Server, args: argparse.Namespace) -> None:
    """--soak-users users for --soak seconds; RSS every --soak-every seconds."""
    print(f"\nsoak: {args.soak_users} users for {args.soak:.0f} s on {server.name}", flush=True)
    print(f"{'t s':>6} {'RSS MB':>8} {'pages':>6} {'p95 s':>6} {'exc':>4} {'err':>4}", flush=True)
    t0 = time.monotonic()
    print(f"{0:>6.0f} {server.rss_mb():>8.0f}", flush=True)
    while time.monotonic() - t0 < args.soak:
        chunk = min(args.soak_every, args.soak - (time.monotonic() - t0))
        r = await load_step(server.base, args.soak_users, chunk, 10**9, args.page_timeout, server)
        print(
            f"{time.monotonic() - t0:>6.0f} {r.rss_after_mb:>8.0f} {len(r.times):>6} "
            f"{pct(r.times, 0.95):>6.2f} {len(r.exceptions):>4} {len(r.errors):>4}",
            flush=True,
        )


def main() -> None:
    """Parse the arguments, start the servers asked for and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=["single", "serve", "both"], default="both")
    parser.add_argument("--url", help="measure a server already running here instead (no memory figures)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="for serve.sh")
    parser.add_argument("--users", default="1,5,20", help="comma-separated concurrent users per step")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per step (bound)")
    parser.add_argument("--max-pages", type=int, default=200, help="page opens per user per step (bound)")
    parser.add_argument(
        "--page-timeout", type=float, default=60.0, help="seconds before a page counts as error"
    )
    parser.add_argument("--trainings", type=int, default=0, help="trainings started and watched on /train")
    parser.add_argument(
        "--redis-workers",
        type=int,
        default=0,
        help="run queue on a local redis-server with this many training workers (several-hosts setup)",
    )
    parser.add_argument(
        "--chaos",
        action="store_true",
        help="kill -9 one serve.sh app process under --users users (benchmarks/bench_chaos.py)",
    )
    parser.add_argument("--before", type=float, default=20.0, help="--chaos: seconds of load before the kill")
    parser.add_argument("--after", type=float, default=40.0, help="--chaos: seconds of load after it")
    parser.add_argument("--soak", type=float, default=0.0, help="then this many seconds at --soak-users")
    parser.add_argument("--soak-users", type=int, default=20)
    parser.add_argument("--soak-every", type=float, default=30.0)
    args = parser.parse_args()
    args.users = [int(u) for u in args.users.split(",") if u.strip()]
    if args.soak > 3600 or args.duration > 3600:
        parser.error("--soak and --duration are bounded to one hour")

    if args.chaos:
        from bench_chaos import chaos

        users = max(args.users)
        print(f"{os.cpu_count()} cores; chaos: {users} users, serve.sh --workers {args.workers}", flush=True)
        with (
            tempfile.TemporaryDirectory(prefix="bench-chaos-") as tmp,
            started("serve", args.workers, Path(tmp)) as s,
        ):
            asyncio.run(chaos(s, users, args.before, args.after, args.page_timeout))
        return
    print(
        f"{os.cpu_count()} cores; deep links: {' '.join(DEEP_LINKS)}; "
        f"{args.duration:.0f} s or {args.max_pages} pages per user per step, no think time",
        flush=True,
    )
    print(HEADER, flush=True)
    if args.url:
        server = Server(f"{args.url}", args.url.rstrip("/"), args.workers)
        asyncio.run(bench_target(server, args))
        return
    targets = ["single", "serve"] if args.target == "both" else [args.target]
    with (
        tempfile.TemporaryDirectory(prefix="bench-load-") as tmp,
        redis_queue(args.redis_workers, Path(tmp)) as url,
    ):
        if url:
            os.environ["ATTENTION_LAB_REDIS_URL"] = url  # the servers started below inherit it
            print(f"run queue: Redis {url} with {args.redis_workers} training workers", flush=True)
        for target in targets:
            with started(target, args.workers, Path(tmp)) as server:
                asyncio.run(bench_target(server, args))


if __name__ == "__main__":
    main()
