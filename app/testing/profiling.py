"""Where a page run's server CPU goes: cProfile inside the app processes, per page, and a
classifier that splits it into the router, model compute, chart specs, serialisation, sending,
compiling the scripts again, and the page's own code.

In the app processes (only where a benchmark puts a `sitecustomize.py` on PYTHONPATH, see
`write_sitecustomize`; nothing in the app knows of it): every script run is profiled in its own
thread with a `cProfile.Profile` timed by `time.thread_time` (the thread's own CPU, so a run
waiting for the GIL or a core is not charged), filed under the page it ran (`Page.run`'s
url_path); the event loop thread, where messages are serialised and sent, has one profile of its
own, and each page's share of it is the share of the messages sent for it. SIGUSR1 starts afresh
(after a warm-up), SIGUSR2 writes `<dir>/<pid>/page-*.prof`, `loop.prof` and `meta.json`, then
`done`; a process that exits without having written does so at exit.

With CLOCK_ENV set too, nothing is profiled: the shim notes the process's CPU (`time.process_time`,
every thread, nanoseconds) as each script run starts, and `run_costs` reads one run's cost as the
CPU until the next run starts in that process. With one student and no think time that is the
run, its messages sent on the event loop and its teardown; /proc's clock ticks (10 ms) are too
coarse for one run, which is why the median over the mix is read here.

Why cProfile and not py-spy: it needs no privileges or extra tool on the box, and it knows which
page a run belonged to; its overhead inflates Python-heavy code more than torch's C, so read its
split as shares and take CPU per run from /proc (`Server.cpu_seconds`).
"""

from __future__ import annotations

import atexit
import cProfile
import functools
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import pstats
import re
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

PROFILE_ENV = "BENCH_PROFILE_DIR"  # the benchmark's shim only: not a setting of the lab
CLOCK_ENV = "BENCH_PROFILE_CLOCK"  # with it: each run's process CPU only, no cProfile
RESET, DUMP = signal.SIGUSR1, signal.SIGUSR2
SITECUSTOMIZE = "from attention_lab.testing.profiling import install\n\ninstall()\n"


# ---------------------------------------------------------------- in the app processes


class Shim:
    """The profiles of one app process: per page the merged stats of its runs, the event loop's
    profile, run and message counts, and which page each session shows."""

    def __init__(self, folder: Path, clock: bool = False) -> None:
        self.folder, self.lock, self.local, self.clock = folder, threading.Lock(), threading.local(), clock
        self.loop: Any = None  # the event loop, once a message was sent
        self.loop_profile: cProfile.Profile | None = None
        self.active, self.written = True, False
        self.clear()

    def clear(self) -> None:
        """Forget everything profiled so far (a new generation: runs under way are dropped)."""
        self.stats: dict[str, pstats.Stats] = {}
        self.runs: Counter[str] = Counter()
        self.messages: Counter[str] = Counter()
        self.misfiled = 0  # runs whose messages were counted under another page than the one run
        self.pages: dict[str, str] = {}  # session id -> the page its runs show
        # clock mode, per run: (process CPU at its start, page, session, its script thread's CPU)
        self.starts: list[tuple[float, str, str, float]] = []

    def run_script(self, original: Callable[..., Any], runner: Any, rerun_data: Any) -> Any:
        """The PROFILED "run_script" hook (a whole script run), profiled in this thread with a
        profile of its own (a page recompiled after Streamlit cleared its script cache has new code
        objects, which one profile would file under one name, keeping the last), then merged into
        its page's stats."""
        from attention_lab.frame.streamlit_private import rerun_page_name, runner_session_id

        session, asked = runner_session_id(runner), rerun_page_name(rerun_data)
        guess = "/" + asked if asked else self.pages.get(session, "/")
        self.pages[session], self.local.page = guess, None  # the loop counts this run's messages so
        if not self.active:
            return original(runner, rerun_data)
        if self.clock:
            return self.clock_run(original, runner, rerun_data, session)
        generation, profile = self.stats, cProfile.Profile(time.thread_time)
        profile.enable()
        try:
            return original(runner, rerun_data)
        finally:
            profile.disable()
            page = self.local.page or guess
            self.pages[session] = page
            stats = pstats.Stats(profile)
            with self.lock:
                if generation is self.stats:
                    self.stats[page] = self.stats[page].add(stats) if page in self.stats else stats
                    self.runs[page] += 1
                    self.misfiled += page != guess

    def clock_run(self, original: Callable[..., Any], runner: Any, rerun_data: Any, session: str) -> Any:
        """A script run in clock mode: note the process's CPU at its start, its page, its session and
        the CPU of its own thread (the script; the rest is the event loop and Streamlit's other work)."""
        starts, started, own = self.starts, time.process_time(), time.thread_time()
        try:
            return original(runner, rerun_data)
        finally:
            page = self.pages[session] = self.local.page or self.pages[session]
            with self.lock:
                starts.append((started, page, session, time.thread_time() - own))

    def page_run(self, original: Callable[..., Any], page: Any) -> Any:
        """st.Page.run: note which page this run shows."""
        self.local.page = "/" + page.url_path
        return original(page)

    def send_message(self, original: Callable[..., Any], runtime: Any, session_info: Any, msg: Any) -> Any:
        """The PROFILED "send_message" hook, on the event loop: count the message for its
        session's page and, the first time, start the loop's profile in this thread."""
        if self.loop is None:
            import asyncio

            self.loop = asyncio.get_running_loop()
            self.restart_loop_profile()
        from attention_lab.frame.streamlit_private import sender_session_id

        self.messages[self.pages.get(sender_session_id(session_info), "?")] += 1
        return original(runtime, session_info, msg)

    def restart_loop_profile(self) -> None:
        """A fresh profile of the event loop thread (called in it)."""
        if self.loop_profile is not None:
            self.loop_profile.disable()
        self.loop_profile = cProfile.Profile(time.thread_time) if self.active and not self.clock else None
        if self.loop_profile is not None:
            self.loop_profile.enable()

    def reset(self) -> None:
        """Start afresh (in the event loop thread): what was profiled until now is dropped."""
        with self.lock:
            self.clear()
            self.active, self.written = True, False
        self.restart_loop_profile()

    def write(self) -> None:
        """Stop profiling and write every page's merged profile, the loop's and the counts."""
        self.active = False
        if self.loop_profile is not None:
            self.loop_profile.disable()
        with self.lock:
            pages, runs, messages, misfiled = self.stats, dict(self.runs), dict(self.messages), self.misfiled
            self.stats, starts = {}, sorted(self.starts)
        out = self.folder / str(os.getpid())
        out.mkdir(parents=True, exist_ok=True)
        for page, stats in pages.items():
            stats.dump_stats(out / f"page-{page.strip('/') or 'home'}.prof")
        if self.loop_profile is not None:
            self.loop_profile.dump_stats(out / "loop.prof")
            self.loop_profile = None
        meta = {"runs": runs, "messages": messages, "misfiled": misfiled, "starts": starts}
        (out / "meta.json").write_text(json.dumps(meta))
        (out / "done").touch()
        self.written = True

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """SIGUSR1: reset, SIGUSR2: write; both done in the event loop's thread, which owns its profile."""
        action = self.reset if signum == RESET else self.write
        if self.loop is None:
            action()
        else:
            self.loop.call_soon_threadsafe(action)

    def at_exit(self) -> None:
        """Write at exit what a signal did not."""
        if self.active and not self.written:
            self.write()


def install() -> None:
    """In an app process started with PROFILE_ENV set: profile script runs and the event loop.
    Streamlit is imported here, before the app's command imports it: the same modules, a moment
    earlier."""
    folder = os.environ.get(PROFILE_ENV)
    if not folder:
        return
    from attention_lab.frame.streamlit_private import wrap_profiled

    shim = Shim(Path(folder), clock=bool(os.environ.get(CLOCK_ENV)))
    wrap_profiled(dict(run_script=shim.run_script, page_run=shim.page_run, send_message=shim.send_message))
    signal.signal(RESET, shim.on_signal)
    signal.signal(DUMP, shim.on_signal)
    atexit.register(shim.at_exit)


def write_sitecustomize(folder: Path) -> Path:
    """A folder holding the `sitecustomize.py` that installs the shim: put it first on PYTHONPATH
    of the server to profile (and set PROFILE_ENV)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return folder


# ---------------------------------------------------------------- reading and classifying

CATEGORIES = ("router", "model", "charts", "serialisation", "sending", "compile", "page", "other")
#: the modules each part is made of besides Streamlit's own (streamlit_private.RUN_PARTS; the
#: first match wins); anything else is charged to its callers. "compile": Home.py and the page
#: compiled again (Streamlit clears its script cache whenever an app process has no session left)
MODULES = (
    (
        "router",
        ("attention_lab.Home", "attention_lab.frame", "attention_lab.lecture", "attention_lab.accounts"),
    ),
    ("model", ("transformer_core", "attention_lab.models", "attention_lab.viewmodel")),
    ("charts", ("attention_lab.charts",)),
    ("serialisation", ("google.protobuf", "json")),
    ("sending", ("websockets", "starlette", "uvicorn", "h11", "wsproto")),
    ("page", ("attention_lab.views", "attention_lab.explorers", "attention_lab.lesson_pages")),
    ("page", ("attention_lab.lessons", "attention_lab.training")),
)
#: C functions (cProfile names them, without a file) by what their name holds
BUILTINS = (
    ("serialisation", ("google._upb", "_json", "SerializeToString")),
    ("sending", ("_socket.socket",)),
    ("compile", ("<built-in method builtins.compile>",)),
)
Func = tuple[str, int, str]


def _roots() -> list[tuple[str, str]]:
    """(folder, package) of the lab's own code: app/ is attention_lab, and transformer_core."""
    app = Path(__file__).resolve().parents[1]
    spec = importlib.util.find_spec("transformer_core")
    core = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    folders = [(app, "attention_lab")] + [(c, "transformer_core") for c in core]
    return [(str(f.resolve()) + "/", name) for f, name in folders] + [(str(f) + "/", n) for f, n in folders]


ROOTS = _roots()
LIBRARY = re.compile(r".*/(?:site-packages|dist-packages|python3\.\d+)/(.+?)(?:/__init__)?\.py$")


def module_of(filename: str) -> str:
    """The dotted module a profiled function's file is (app/views/gpt.py -> attention_lab.views.gpt)."""
    for folder, package in ROOTS:
        if filename.startswith(folder):
            return package + "." + filename[len(folder) :].removesuffix(".py").replace("/", ".")
    found = LIBRARY.search(filename)
    return found.group(1).replace("/", ".") if found else filename


@functools.cache
def _modules() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """MODULES and Streamlit's modules by part, read once (here, not at import: a profiled server
    imports this module before Streamlit)."""
    from attention_lab.frame.streamlit_private import RUN_PARTS

    return MODULES + tuple(RUN_PARTS.items())


def category_of(func: Func) -> str | None:
    """The part a function belongs to by its module (or, for C functions, its name); None: its callers'."""
    filename, _, name = func
    if filename == "~":
        return next((part for part, marks in BUILTINS if any(m in name for m in marks)), None)
    module = module_of(filename)
    for part, prefixes in _modules():
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return part
    return None


def split(stats: dict[Func, tuple], sweeps: int = 60) -> Counter[str]:
    """Seconds per part (CATEGORIES): each function's own time goes to its part, or, where its
    module is none of them (Streamlit's elements, numpy, torch's C), to its callers' parts in the
    shares its callers called it (a fixed point, so that call cycles such as st.* wrapping st.*
    settle); a function no known part reached goes to "other"."""
    own = {func: category_of(func) for func in stats}
    mixes: dict[Func, dict[str, float]] = {f: {part: 1.0} for f, part in own.items() if part}
    order = sorted((f for f in stats if not own[f]), key=lambda f: -stats[f][3])  # callers before callees
    for _ in range(sweeps):
        moved = 0.0
        for func in order:
            edges = {c: e[3] for c, e in stats[func][4].items() if c != func}
            new = _blend(edges, mixes)
            old = mixes.get(func, {})
            moved = max(moved, *(abs(new.get(p, 0.0) - old.get(p, 0.0)) for p in CATEGORIES))
            mixes[func] = new
        if moved < 1e-4:
            break
    seconds: Counter[str] = Counter()
    for func, (_, _, tt, _, callers) in stats.items():
        shares = mixes[func] if own[func] else _blend({c: e[2] for c, e in callers.items()}, mixes, func)
        for part, share in shares.items():
            seconds[part] += tt * share
    return seconds


def _blend(
    weights: dict[Func, float], mixes: dict[Func, dict[str, float]], me: Func | None = None
) -> dict[str, float]:
    """The callers' parts weighted by what each passed on; callers not settled yet are left out (a
    recursive call is `me`'s own), and a function with none is "other"."""
    known = {c: w for c, w in weights.items() if w > 0 and (c == me or mixes.get(c))}
    total = sum(known.values())
    if total <= 0:
        return {"other": 1.0}
    blended: Counter[str] = Counter()
    for caller, weight in known.items():
        for part, share in (mixes.get(me, {}) if caller == me else mixes[caller]).items():
            blended[part] += share * weight / total
    return dict(blended) or {"other": 1.0}


@dataclass
class PageProfile:
    """One page's profile over every app process: its runs, script-thread stats, loop messages."""

    page: str
    runs: int = 0
    messages: int = 0
    files: list[Path] = field(default_factory=list)

    def stats(self) -> pstats.Stats:
        """The merged script-thread stats of every process."""
        return pstats.Stats(*map(str, self.files))


@dataclass
class Profiles:
    """What `read_profiles` found: each page's, the event loop's (all pages) and misfiled runs."""

    pages: dict[str, PageProfile]
    loop: pstats.Stats | None
    misfiled: int


def read_profiles(folder: Path) -> Profiles:
    """Every app process's written profiles under `folder`, merged per page."""
    pages: dict[str, PageProfile] = {}
    loops, misfiled = [], 0
    for proc in sorted(p for p in folder.iterdir() if (p / "done").exists()):
        meta = json.loads((proc / "meta.json").read_text())
        misfiled += meta["misfiled"]
        for page, runs in meta["runs"].items():
            entry = pages.setdefault(page, PageProfile(page))
            entry.runs += runs
            entry.messages += meta["messages"].get(page, 0)
            path = proc / f"page-{page.strip('/') or 'home'}.prof"
            entry.files += [path] if path.exists() else []
        if (proc / "loop.prof").exists():
            loops.append(str(proc / "loop.prof"))
    return Profiles(
        {p: e for p, e in pages.items() if e.files}, pstats.Stats(*loops) if loops else None, misfiled
    )


def run_costs(folder: Path) -> dict[str, list[tuple[float, float]]]:
    """Clock mode's CPU seconds per session, by page, over every app process that wrote: (all of
    it, its script runs' own threads). All of it runs from its first run's start to the next
    session's in that process. A session is one page open (with the widget changes a student then
    made, where any): its runs together, however many Streamlit started for it. Each process's
    last session has no end and is dropped."""
    costs: dict[str, list[tuple[float, float]]] = {}
    for proc in sorted(p for p in folder.iterdir() if (p / "done").exists()):
        sessions: list[list[Any]] = []  # [start, page, session, script seconds]
        for began, page, session, script in json.loads((proc / "meta.json").read_text()).get("starts", []):
            if sessions and sessions[-1][2] == session:
                sessions[-1][3] += script
            else:
                sessions.append([began, page, session, script])
        for (began, page, _, script), (after, *_) in zip(sessions, sessions[1:], strict=False):
            costs.setdefault(page, []).append((after - began, script))
    return costs


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of `values` (nearest rank; NaN for none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


def clock_report(costs: dict[str, list[tuple[float, float]]]) -> list[str]:
    """run_costs' table in ms: per page and over them all, the opens' quartiles, p90 and mean, and
    the median of their script threads' CPU."""
    heads = ("p25", "median", "p75", "p90", "mean", "script")
    lines = [f"{'page':<12} {'opens':>5} " + " ".join(f"{h:>6}" for h in heads)]
    for page, opens in [*sorted(costs.items()), ("the mix", [o for v in costs.values() for o in v])]:
        ms = sorted(1000 * total for total, _ in opens)
        script = sorted(1000 * own for _, own in opens)
        figures = [quantile(ms, q) for q in (0.25, 0.5, 0.75, 0.9)]
        figures += [sum(ms) / len(ms) if ms else float("nan"), quantile(script, 0.5)]
        lines.append(f"{page:<12} {len(ms):>5} " + " ".join(f"{x:>6.1f}" for x in figures))
    return lines


def label(func: Func) -> str:
    """A function as a reader knows it: module:line(name), or a C function's name."""
    filename, line, name = func
    return name if filename == "~" else f"{module_of(filename)}:{line}({name})"


def top_items(stats: pstats.Stats, runs: int, count: int = 15) -> list[str]:
    """The `count` functions with the most cumulative time (ms per run), the shim's own left out."""
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][3], reverse=True)  # type: ignore[attr-defined]
    lines = [f"{'cum ms':>8} {'own ms':>7} {'calls':>7}  function"]
    for func, (_, calls, tt, ct, _) in rows:
        if module_of(func[0]).startswith("attention_lab.testing"):
            continue
        lines.append(f"{1000 * ct / runs:>8.2f} {1000 * tt / runs:>7.2f} {calls / runs:>7.1f}  {label(func)}")
        if len(lines) > count:
            break
    return lines


def page_report(
    entry: PageProfile, loop_parts: Counter[str], loop_share: float, measured_ms: float | None, count: int
) -> list[str]:
    """One page's lines: CPU per run (script thread, its share of the loop), the split, the top items.
    The split's milliseconds are its shares of `measured_ms` (server CPU per run without the
    profiler, from /proc) where given, else of the profiled CPU."""
    stats = entry.stats()
    script = split(stats.stats)  # type: ignore[attr-defined]
    loop = Counter({part: s * loop_share for part, s in loop_parts.items()})
    both, per_run = script + loop, 1000 / entry.runs
    total = sum(both.values()) or 1e-9
    head = (
        f"{entry.page}: {entry.runs} runs profiled, {per_run * total:.1f} ms CPU per run under cProfile "
        f"(script thread {per_run * sum(script.values()):.1f} ms, a share of the event loop "
        f"{per_run * sum(loop.values()):.1f} ms for its {entry.messages / entry.runs:.0f} messages)"
    )
    if measured_ms is not None:
        head += f"; {measured_ms:.1f} ms per run without the profiler (/proc)"
    base = measured_ms if measured_ms is not None else per_run * total
    parts = "  ".join(
        f"{p} {100 * both[p] / total:.0f}% ({base * both[p] / total:.1f} ms)" for p in CATEGORIES
    )
    return [head, "  " + parts, *("    " + line for line in top_items(stats, entry.runs, count))]


def report(profiles: Profiles, measured_ms: dict[str, float] | None = None, count: int = 15) -> Iterable[str]:
    """Every page's lines (most runs first), then the event loop's own split; `measured_ms`: server
    CPU per run of each page without the profiler, where measured."""
    loop_parts = split(profiles.loop.stats) if profiles.loop else Counter()  # type: ignore[attr-defined]
    sent = sum(e.messages for e in profiles.pages.values()) or 1
    for entry in sorted(profiles.pages.values(), key=lambda e: -e.runs):
        measured = (measured_ms or {}).get(entry.page)
        yield from page_report(entry, loop_parts, entry.messages / sent, measured, count)
    loop_total = sum(loop_parts.values()) or 1
    yield "event loop, all pages: " + "  ".join(
        f"{part} {100 * loop_parts[part] / loop_total:.0f}%" for part in CATEGORIES
    )
    if profiles.misfiled:
        yield f"({profiles.misfiled} runs showed another page than the one they were filed under)"
