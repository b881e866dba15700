"""A class exploring on its own: every page open a new session on new input, measured from client
processes of their own, with the server's CPU per page run and (--profile) where it goes.

    python benchmarks/bench_explore.py                                  # serve --workers 2: 1/5/20 users
    python benchmarks/bench_explore.py --target both --single-users 1   # and one `attention-lab` process
    python benchmarks/bench_explore.py --changes 3                      # then 3 widget changes per open
    python benchmarks/bench_explore.py --per-page 20                    # and each page alone, 1 user, 20 s
    python benchmarks/bench_explore.py --profile --profile-users 5      # cProfile per page, top 15 items
    python benchmarks/bench_explore.py --users "" --per-run 120         # each run's CPU: the mix's median
    python benchmarks/bench_explore.py --baseline /tmp/main             # paired with another checkout
    python benchmarks/bench_explore.py --url http://127.0.0.1:8501 --workers 2   # a server already running
    python benchmarks/bench_explore.py --users "" --soak 600 --soak-users 20   # memory over a 10-minute soak

Each simulated student is one browser speaking Streamlit's protocol (attention_lab.testing.explore):
it opens a deep link as a new tab does (GET the HTML, keeping the route cookie; a new websocket,
so a new session; a rerun BackMsg with the link's path and query) with its own input drawn,
seeded, from fixed lists: 34 names and short prompts (their letters, at most 10, on /reversal),
every shipped checkpoint the page lists, a layer and head within its shape, switches, and on
/gpt max_new, temperature, top_k, top_p and seed; 40% /gpt, 30% /reversal, 30% /basics,
/positions and /variance (three of their inputs moved). With --changes N it then changes N of
the page's widgets one at a time (a new text, another head or layer, a switch flipped, another
setting), sending every widget's state in a rerun BackMsg as the browser does, and reads each run
to script_finished. No think time: `users` is the number of page runs in flight at once.
--open-tabs K leaves K more tabs open on / meanwhile (students keep tabs open; an app process
with no session left clears Streamlit's compiled scripts, and its next run compiles them again).

The students run in --client-procs processes of their own (spawned, started together once
imported), and each reports its own CPU (user + system), so the server's CPU is the server's:
read from /proc for every process of the server (the app processes, nginx, the supervisor)
before and after the step. Printed per step: page opens, widget changes, p50/p95/max seconds of
every page run (an open: HTML request to script_finished; a change: BackMsg to script_finished),
page runs per second, server CPU ms per page run (nginx's part), the clients' CPU (seconds and
% of one core), the load average when the step started, exceptions drawn, errors, and how many
of the opens were distinct links. Before measuring, every app process opens every checkpoint on
its page and every lesson (model loads are not in the figures); each step draws its own inputs.

--profile starts a second server with a `sitecustomize.py` on its PYTHONPATH that profiles every
script run with cProfile (attention_lab.testing.profiling; nothing in the app knows of it), runs
--profile-users for --duration seconds, and prints per page the CPU per run split into the
router, model compute, chart specs, serialisation, sending, compiling, the page's own code and
other, and its 15 top items by cumulative time. With --per-page, the split is also given in
milliseconds of each page's server CPU per run measured without the profiler.

--per-run SECONDS then runs one student on a server whose app processes note their CPU
(process_time, in ns) as each script run starts (the shim's clock mode): each page open's server
CPU is from its first run to the next open's in that process (its run, messages and teardown;
not nginx's 1%). Printed per page and over the mix: quartiles, p90, mean and the median of its
script threads (the rest is the event loop). The goal's "median over the mix" is read here: /proc's
10 ms ticks are too coarse for one run. With --baseline, the halves run A B B A (its shim needs
the clock mode).

--soak SECONDS then runs --soak-users students for that long in one-minute steps, printing each
minute's row with the app processes' resident memory (VmRSS, MiB, each process), to see whether
memory stays flat while a class keeps exploring.

--baseline DIR serves another checkout too (`git worktree add DIR COMMIT`, or `git archive COMMIT |
tar -x -C DIR`), its packages first on its servers' PYTHONPATH, and runs every step on both, in
alternating order, with the same students' draws (the checkpoints both ship): on a shared box
whose speed drifts within minutes, only such paired figures compare two versions.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from attention_lab.testing import profiling
from attention_lab.testing.explore import (
    EXPLORE_MIX,
    ExploreTally,
    ModelShape,
    explore_process,
    shipped_models,
    warm_links,
)
from attention_lab.testing.profiling import quantile
from attention_lab.testing.servers import Server, cpu_seconds, free_port, launched, wait_healthy
from attention_lab.testing.tabs import DEEP_LINKS, warm_up


@dataclass
class Step:
    """One load step: the students' tally, its wall time, the clients' and the server's CPU."""

    label: str
    users: int
    tally: ExploreTally = field(default_factory=ExploreTally)
    elapsed: float = 0.0
    client_cpu: float = 0.0
    server_cpu: dict[str, float] = field(default_factory=dict)  # role -> CPU seconds in the step
    load: float = 0.0

    @property
    def runs(self) -> int:
        """Page runs: opens and widget changes."""
        return len(self.tally.opens) + len(self.tally.changes)

    def server_ms_per_run(self) -> float:
        """Server CPU per page run, every process of the server (NaN where not started here)."""
        total = sum(self.server_cpu.values()) if self.server_cpu else float("nan")
        return 1000 * total / self.runs if self.runs else float("nan")


# ---------------------------------------------------------------- the server


@dataclass(frozen=True)
class Baseline:
    """Another checkout to measure: `path` goes first on its servers' PYTHONPATH; a checkout from
    before the package (no app/cli.py: `lab`, `serving` at the top) is started as it was then,
    `bash deploy/serve.sh` or `streamlit run app/Home.py` from its root."""

    checkout: Path
    path: Path
    packaged: bool


def baseline_path(checkout: Path, folder: Path) -> Baseline:
    """The Baseline of `checkout`: packaged, a folder that imports attention_lab and transformer_core
    from it (its app/, and its transformer_core/ with its checkpoints/ inside, as pyproject maps
    them); from before the package, its root."""
    checkout = checkout.resolve()
    if not (checkout / "app" / "cli.py").exists():
        return Baseline(checkout, checkout, packaged=False)
    out = folder / "baseline-packages"
    core = out / "transformer_core"
    core.mkdir(parents=True, exist_ok=True)
    (out / "attention_lab").symlink_to(checkout / "app")
    for entry in (checkout / "transformer_core").iterdir():
        (core / entry.name).symlink_to(entry)
    if not (core / "checkpoints").exists():
        (core / "checkpoints").symlink_to(checkout / "checkpoints")
    return Baseline(checkout, out, packaged=True)


def server_command(
    target: str, workers: int, port: int, baseline: Baseline | None
) -> tuple[list[str], Path | None]:
    """The command line of a server, and the folder it must start in (None: anywhere but a checkout)."""
    flags = ["--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true"]
    flags += ["--browser.gatherUsageStats", "false"]  # the rest as installed: each lab's own config
    if baseline is not None and not baseline.packaged:
        root = baseline.checkout
        if target == "single":
            return [sys.executable, "-m", "streamlit", "run", str(root / "app" / "Home.py"), *flags], root
        return [
            "bash",
            str(root / "deploy" / "serve.sh"),
            "--workers",
            str(workers),
            "--port",
            str(port),
        ], root
    app = [sys.executable, "-m", "attention_lab"]
    if target == "single":
        return app + flags, None
    return app + ["serve", "--workers", str(workers), "--port", str(port)], None


def with_path(env: dict[str, str], first: Path | None) -> dict[str, str]:
    """`env` with `first` put first on its PYTHONPATH."""
    if first is None:
        return env
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(first), env.get("PYTHONPATH", "")]))}


@contextmanager
def started(
    target: str,
    workers: int,
    folder: Path,
    profile_dir: Path | None = None,
    baseline: Baseline | None = None,
    clock: bool = False,
) -> Iterator[Server]:
    """`attention-lab serve --workers N` ("serve") or one `attention-lab` process ("single") on a
    free port, its runs under `folder`; with `profile_dir`, its app processes profiled (`clock`:
    each run's CPU noted instead); with `baseline` (a baseline_path), the other checkout's lab."""
    port = free_port()
    cmd, cwd = server_command(target, workers, port, baseline)
    count = 1 if target == "single" else workers
    name = "attention-lab (1 process)" if target == "single" else f"attention-lab serve --workers {workers}"
    env = {**os.environ, "ATTENTION_LAB_RUNS_DIR": str(folder / f"runs-{target}"), "PYTHON": sys.executable}
    env = with_path(env, baseline.path if baseline else None)
    if profile_dir is not None:
        env = with_path(env, profiling.write_sitecustomize(folder / "shim"))
        env[profiling.PROFILE_ENV] = str(profile_dir)
        env |= {profiling.CLOCK_ENV: "1"} if clock else {}
        name += " + run clock" if clock else " + cProfile"
    name += f" (baseline{'' if baseline.packaged else ', before the package'})" if baseline else ""
    server = Server(name, f"http://127.0.0.1:{port}", count)
    log = folder / f"{target}{'-profiled' if profile_dir else ''}{'-baseline' if baseline else ''}.log"
    log = log.with_stem(log.stem + "-clock") if clock else log
    with launched(cmd, log, env, cwd=cwd or folder) as proc:  # not this checkout: `-m` puts it first
        server.proc = proc
        wait_healthy(server.base, proc, log)
        yield server


def role(pid: int) -> str:
    """What a process of the server is: "app" (Streamlit), "nginx" or "other" (the supervisor)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return "other"
    app = b"streamlit" in cmdline or b"attention_lab.deploy.app_process" in cmdline
    return "app" if app else "nginx" if b"nginx" in cmdline else "other"


def server_cpu(server: Server) -> dict[str, float]:
    """CPU seconds so far of each role of the server's processes (empty where not started here)."""
    used: dict[str, float] = {}
    for pid in server.app_pids():
        kind = role(pid)
        used[kind] = used.get(kind, 0.0) + cpu_seconds(pid)
    return used


def app_rss_mib(server: Server) -> list[float]:
    """Resident memory (VmRSS, MiB) of each of the server's Streamlit processes."""
    sizes = []
    for pid in server.app_pids():
        if role(pid) != "app":
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                sizes += [int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:")]
        except OSError:
            continue
    return sizes


def soak(server: Server, models: list[ModelShape], args: argparse.Namespace) -> None:
    """--soak-users students for --soak seconds, a row per minute with the app processes' memory."""
    shown = lambda: " / ".join(f"{m:,.0f}" for m in app_rss_mib(server))  # noqa: E731
    print(
        f"soak: {args.soak_users} users for {args.soak:.0f} s; app processes' RSS at the start {shown()} MiB"
    )
    for minute in range(max(1, round(args.soak / 60))):
        step = run_step(server, models, args.soak_users, args, f"soak, minute {minute + 1}", duration=60.0)
        print(row(step) + f"\n    RSS {shown()} MiB", flush=True)


def signal_apps(server: Server, signum: int) -> list[int]:
    """Send `signum` to the server's Streamlit processes only; their pids."""
    pids = [pid for pid in server.app_pids() if role(pid) == "app"]
    for pid in pids:
        os.kill(pid, signum)
    return pids


# ---------------------------------------------------------------- a step


def run_step(
    server: Server,
    models: list[ModelShape],
    users: int,
    args: argparse.Namespace,
    label: str,
    **extra: object,
) -> Step:
    """`users` students in --client-procs processes for --duration seconds (extra: explore()'s
    options, e.g. mix); the server's CPU read around it."""
    procs = max(1, min(args.client_procs or -(-users // 25), users))
    chunks = [list(range(users))[i::procs] for i in range(procs)]
    duration = float(extra.pop("duration", args.duration))  # type: ignore[arg-type]
    options = {"changes": args.changes, "timeout": args.page_timeout, "max_pages": args.max_pages}
    options |= {"seed": f"{args.seed}-{users}-{extra.get('mix') or 'mix'}", **extra}  # paired: the same draws
    step = Step(label, users)
    start_at = time.time() + args.client_start
    with ProcessPoolExecutor(procs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [
            pool.submit(
                explore_process, server.base, models, chunk, start_at, duration, **options, open_tabs=tabs
            )
            for chunk, tabs in zip(chunks, [args.open_tabs] + [0] * len(chunks), strict=False)
        ]
        time.sleep(max(0.0, start_at - time.time()))
        step.load, before = os.getloadavg()[0], server_cpu(server)
        for future in futures:
            tally, wall, cpu = future.result()
            step.tally.merge(tally)
            step.elapsed, step.client_cpu = max(step.elapsed, wall), step.client_cpu + cpu
        after = server_cpu(server)
    step.server_cpu = {r: after.get(r, 0.0) - before.get(r, 0.0) for r in after}
    return step


pct = profiling.quantile

HEADER = (
    f"{'target':<36} {'users':>5} {'opens':>5} {'chg':>4} {'p50 s':>6} {'p95 s':>6} {'max s':>6} "
    f"{'runs/s':>6} {'srv ms/run':>10} {'nginx':>5} {'client CPU':>14} {'load':>5} {'exc':>3} {'err':>3} "
    f"{'distinct':>9}"
)


def row(step: Step) -> str:
    """One step's line of the table (HEADER), and for widget changes a line of its own."""
    t = step.tally
    times = t.opens + t.changes
    nginx = step.server_cpu.get("nginx", 0.0) / (sum(step.server_cpu.values()) or float("nan"))
    client = f"{step.client_cpu:.1f} s ({100 * step.client_cpu / step.elapsed:.0f}%)" if step.elapsed else "-"
    line = (
        f"{step.label:<36} {step.users:>5} {len(t.opens):>5} {len(t.changes):>4} "
        f"{statistics.median(times) if times else float('nan'):>6.3f} {quantile(times, 0.95):>6.3f} "
        f"{max(times, default=float('nan')):>6.3f} {step.runs / step.elapsed if step.elapsed else 0:>6.2f} "
        f"{step.server_ms_per_run():>10.1f} {nginx:>5.0%} {client:>14} {step.load:>5.2f} "
        f"{len(t.exceptions):>3} {len(t.errors):>3} {len(set(t.links)):>4}/{len(t.links):<4}"
    )
    if t.changes:
        line += (
            f"\n    opens p50/p95 {statistics.median(t.opens):.3f}/{quantile(t.opens, 0.95):.3f} s, changes "
            f"p50/p95 {statistics.median(t.changes):.3f}/{quantile(t.changes, 0.95):.3f} s; the page took "
            f"{t.applied}/{t.checkable} changes and {t.echoed}/{t.explorer_opens} drawn inputs"
        )
    for message in sorted(set(t.exceptions + t.errors))[:5]:
        line += f"\n    {message}"
    return line


# ---------------------------------------------------------------- runs


def measure(
    servers: list[Server], models: list[ModelShape], users: list[int], args: argparse.Namespace, pages: bool
) -> dict[str, float]:
    """Warm up, then one step per user count and (`pages`) one per page alone, on every server in
    turn (alternating which goes first); the first server's ms per run of each page."""
    for server in servers:
        asyncio.run(warm_up(server.base, server.workers, args.page_timeout, DEEP_LINKS + warm_links(models)))
        if server.proc is not None:  # what the server burns with nobody on it, part of every figure below
            before, started_at = sum(server_cpu(server).values()), time.perf_counter()
            time.sleep(5.0)
            idle = (sum(server_cpu(server).values()) - before) / (time.perf_counter() - started_at)
            print(f"{server.name}: idle server CPU {1000 * idle:.1f} ms per second", flush=True)
    steps: list[tuple[int, str | None]] = [(count, None) for count in users]
    steps += [(1, page) for page in (EXPLORE_MIX if pages else ())]
    per_page: dict[str, float] = {}
    for i, (count, page) in enumerate(steps):
        for server in servers if i % 2 == 0 else servers[::-1]:
            mine = server is servers[0]
            label = server.name if page is None else f"{page} alone" + ("" if mine else " (baseline)")
            extra = {} if page is None else {"mix": {page: 1.0}, "duration": args.per_page}
            step = run_step(server, models, count, args, label, **extra)
            if page is not None and mine:
                per_page[page] = step.server_ms_per_run()
            print(row(step), flush=True)
    return per_page


def warm_then_reset(server: Server, models: list[ModelShape], args: argparse.Namespace) -> None:
    """Open every model and lesson in every app process, then have its shim start afresh."""
    asyncio.run(warm_up(server.base, server.workers, args.page_timeout, DEEP_LINKS + warm_links(models)))
    signal_apps(server, profiling.RESET)
    time.sleep(1.0)


def dump(server: Server, out: Path) -> None:
    """Have the server's app processes write what their shim holds under `out`; wait until they have."""
    pids = signal_apps(server, profiling.DUMP)
    deadline = time.monotonic() + 120
    while not all((out / str(pid) / "done").exists() for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.5)


def clock_pass(
    models: list[ModelShape], args: argparse.Namespace, folder: Path, baseline: Baseline | None
) -> None:
    """One student for --per-run seconds on a server that notes each run's CPU; the opens' costs.
    With a baseline, each checkout gets two halves in the order A B B A (a drift of the box's
    speed falls on both alike), with the same students' draws."""
    order = [None] if baseline is None else [None, baseline, baseline, None]
    duration = args.per_run / (len(order) // 2 or 1)
    for i, which in enumerate(order):
        with started("serve", args.workers, folder, folder / f"clock-{i}", which, clock=True) as server:
            warm_then_reset(server, models, args)
            print(row(run_step(server, models, 1, args, server.name, duration=duration)), flush=True)
            dump(server, folder / f"clock-{i}")
    for which in dict.fromkeys(order):
        costs: dict[str, list[tuple[float, float]]] = {}
        for i in (i for i, w in enumerate(order) if w is which):
            for page, opens in profiling.run_costs(folder / f"clock-{i}").items():
                costs.setdefault(page, []).extend(opens)
        name = "this checkout" if which is None else f"baseline {which.checkout}"
        print(f"\nserver CPU per page open, ms ({name}: 1 student, {args.per_run:.0f} s, process_time):")
        for line in profiling.clock_report(costs):
            print(line, flush=True)


def profile_pass(models: list[ModelShape], args: argparse.Namespace, folder: Path, per_page: dict) -> None:
    """A profiled server: warm up, reset the profiles, --profile-users students, write and report."""
    out = args.profile_dir or folder / "profiles"
    with started("serve", args.workers, folder, profile_dir=out) as server:
        warm_then_reset(server, models, args)
        print(row(run_step(server, models, args.profile_users, args, server.name)), flush=True)
        dump(server, out)
    print(f"\nprofile ({args.profile_users} users, {args.duration:.0f} s, cProfile timed by thread CPU):")
    for line in profiling.report(profiling.read_profiles(out), per_page or None, args.top):
        print(line, flush=True)


def parse() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=["serve", "single", "both"], default="serve")
    parser.add_argument("--url", help="measure a server already running here (no server CPU figures)")
    parser.add_argument("--workers", type=int, default=2, help="app processes of serve")
    parser.add_argument("--users", default="1,5,20", help="comma-separated concurrent students per step")
    parser.add_argument("--single-users", default="1", help="the same, single process (--target both)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per step")
    parser.add_argument("--changes", type=int, default=0, help="widget changes after each page open")
    parser.add_argument(
        "--max-pages", type=int, default=10**6, help="page opens per student per step (bound)"
    )
    parser.add_argument("--page-timeout", type=float, default=60.0, help="seconds before a run is an error")
    parser.add_argument("--client-procs", type=int, default=0, help="client processes (0: one per 25 users)")
    parser.add_argument("--client-start", type=float, default=5.0, help="seconds the clients get to import")
    parser.add_argument("--seed", type=int, default=0, help="the students' draws (the same for a paired run)")
    parser.add_argument("--per-page", type=float, default=0.0, help="then each page alone: 1 user, so many s")
    parser.add_argument("--per-run", type=float, default=0.0, help="then 1 student, so many s: CPU per open")
    parser.add_argument("--profile", action="store_true", help="then a cProfile pass on a second server")
    parser.add_argument("--profile-users", type=int, default=5)
    parser.add_argument("--top", type=int, default=15, help="top items per page in the profile")
    parser.add_argument("--profile-dir", type=Path, help="keep the profiles here (pstats files per process)")
    parser.add_argument("--baseline", type=Path, help="another checkout, measured paired with this one")
    parser.add_argument("--open-tabs", type=int, default=0, help="tabs on / left open during each step")
    parser.add_argument("--soak", type=float, default=0.0, help="then so many seconds of --soak-users")
    parser.add_argument("--soak-users", type=int, default=20)
    args = parser.parse_args()
    args.users = [int(u) for u in args.users.split(",") if u.strip()]
    args.single_users = [int(u) for u in args.single_users.split(",") if u.strip()]
    if max(args.duration, args.per_page, args.soak, args.per_run) > 3600:
        parser.error("--duration, --per-page, --per-run and --soak are bounded to one hour")
    return args


def main() -> None:
    """Start the servers asked for, print the table, then the profile."""
    args = parse()
    models = shipped_models()
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as tmp:
        baseline = baseline_path(args.baseline, Path(tmp)) if args.baseline else None
        if baseline is not None:  # the students draw what both checkouts ship
            theirs = set(shipped_models(env=with_path(dict(os.environ), baseline.path)))
            models = [m for m in models if m in theirs]
        print(
            f"{os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
            f"{len(models)} checkpoints; {args.duration:.0f} s per step, {args.changes} widget changes per "
            "open, no think time",
            flush=True,
        )
        print(HEADER, flush=True)
        run(args, models, Path(tmp), baseline)


def run(args: argparse.Namespace, models: list[ModelShape], tmp: Path, baseline: Baseline | None) -> None:
    """The table for each target (paired with the baseline where given), then the profile."""
    if args.url:
        server = Server(args.url, args.url.rstrip("/"), args.workers)
        measure([server], models, args.users, args, pages=args.per_page > 0)
        return
    targets = ["single", "serve"] if args.target == "both" else [args.target]
    per_page: dict[str, float] = {}
    for target in targets:  # each page alone: on the last target (serve, where both)
        users = args.single_users if target == "single" and args.target == "both" else args.users
        pages = args.per_page > 0 and target == targets[-1]
        if not (users or pages or args.soak > 0):
            continue  # a clock or profile pass alone: no server to warm up and read idle first
        with ExitStack() as stack:
            servers = [stack.enter_context(started(target, args.workers, tmp))]
            if baseline is not None:
                servers.append(stack.enter_context(started(target, args.workers, tmp, baseline=baseline)))
            per_page = measure(servers, models, users, args, pages)
            if args.soak > 0:
                soak(servers[0], models, args)
    if args.per_run > 0:
        clock_pass(models, args, tmp, baseline)
    if args.profile:
        profile_pass(models, args, tmp, per_page)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop the servers on a kill too
    main()
