"""The `attention-lab` command (`python -m attention_lab` is the same command).

    attention-lab [STREAMLIT FLAGS...]          the app: streamlit run <package>/Home.py
    attention-lab serve --workers N --port P    a class on one box: N app processes behind nginx
    attention-lab worker [--device D] [--redis URL]   a training worker for the Redis run queue
    attention-lab check [--json]                settings, device, and what each way of serving needs

Everything is found through the installed package (Path(attention_lab.__file__).parent)
and this interpreter, so the command works the same from a checkout or a wheel, from any
working directory.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import attention_lab

PROG = "attention-lab"


def app_dir() -> Path:
    """The installed package's folder: Home.py, views/, static/ and .streamlit/ live there."""
    return Path(attention_lab.__file__).parent


def run_app(flags: list[str]) -> int:
    """Replace this process with `streamlit run <package>/Home.py FLAGS` (through APP_PROCESS):
    signals (Ctrl+C, a service manager's SIGTERM) then reach Streamlit itself."""
    argv = [sys.executable, "-m", attention_lab.APP_PROCESS, "run", str(app_dir() / "Home.py"), *flags]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)
    return 1  # not reached: execv returns only by raising


def serve(argv: list[str]) -> int:
    """`serve`: imported when asked for, so `attention-lab --help` and the app start stay quick."""
    from attention_lab.deploy import serve

    return serve.main(app_dir(), argv, f"{PROG} serve")


def check(argv: list[str]) -> int:
    """`check`: imported when asked for (it loads torch to report the device)."""
    from attention_lab.deploy import check

    return check.main(app_dir(), argv, f"{PROG} check")


def worker(argv: list[str]) -> int:
    """The serving layer's worker command (`python -m transformer_core worker`), under this name."""
    from attention_lab.serving.cli import WORKER
    from transformer_core.errors import ConfigError

    parser = argparse.ArgumentParser(prog=f"{PROG} worker", description=WORKER.description)
    WORKER.arguments(parser)
    args = parser.parse_args(argv)
    try:
        WORKER.run(args)
    except ConfigError as exc:
        print(f"{PROG} worker: error: {exc}", file=sys.stderr)
        return 2
    return 0


@dataclass(frozen=True)
class Subcommand:
    """One command after `attention-lab`: each parses its own arguments, so that the bare command
    can hand every flag to Streamlit untouched."""

    name: str
    usage: str
    help: str
    run: Callable[[list[str]], int]


SUBCOMMANDS = {
    c.name: c
    for c in (
        Subcommand("serve", "serve --workers N --port P [--address A] [--run-dir DIR] [--timeout S] "
                   "[--metrics-port M]", "a class on one box: N app processes behind nginx", serve),
        Subcommand("worker", "worker [--device D] [--redis URL]",
                   "a training worker for the Redis run queue (several boxes)", worker),
        Subcommand("check", "check [--json]",
                   "settings, folders, device, and what each way of serving has or misses", check),
    )
}  # fmt: skip


def top_parser() -> argparse.ArgumentParser:
    """The command's own help; the subcommands parse their arguments themselves (worker loads torch)."""
    commands = "\n".join(f"  {c.name:<8} {c.help}\n           {PROG} {c.usage}" for c in SUBCOMMANDS.values())
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [STREAMLIT FLAGS...] | {PROG} {{{','.join(SUBCOMMANDS)}}} ...",
        description="Attention Lab: watch a Transformer's attention, live, in the browser.\n\n"
        "Without a command it starts the app (streamlit run <package>/Home.py) and passes every\n"
        f"flag on to Streamlit, e.g.  {PROG} --server.port 8501 --server.headless true",
        epilog=f"commands:\n{commands}\n\n`{PROG} COMMAND --help` tells more.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {attention_lab.__version__}")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The console script's entry point: a subcommand, the command's own help, or the app."""
    args = sys.argv[1:] if argv is None else list(argv)
    first = args[0] if args else ""
    if first in SUBCOMMANDS:
        return SUBCOMMANDS[first].run(args[1:])
    if first in ("-h", "--help", "--version"):
        top_parser().parse_args(args[:1])
    if first and not first.startswith("-"):
        top_parser().error(
            f"unknown command '{first}' (choose from {', '.join(SUBCOMMANDS)}, or give Streamlit flags)"
        )
    return run_app(args)
