"""Every command and flag, walked from the real argparse parsers.

- `python -m transformer_core`: `transformer_core.cli.build_parser()` (the built-in commands and
  the installed plugins' commands, such as the serving layer's `worker`).
- `attention-lab`: `attention_lab.cli` runs its subcommands' own `main(argv)`, each of which
  builds its parser and parses at once. Each is run here with `--help` while argparse's
  `parse_known_args` is intercepted: the parser arrives, nothing runs. Until that module
  exists the page says so instead of failing.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from . import md_escape, table


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]  # ("--seed",) or ("checkpoint",) for a positional
    default: str
    help: str
    choices: tuple[str, ...]
    required: bool
    metavar: str


@dataclass(frozen=True)
class CommandRef:
    program: str  # "python -m transformer_core" or "attention-lab"
    name: str  # "" for the program itself
    summary: str
    usage: str
    flags: tuple[Flag, ...]

    @property
    def line(self) -> str:
        return f"{self.program} {self.name}".strip()


def _flags(parser: argparse.ArgumentParser) -> tuple[Flag, ...]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        names = tuple(action.option_strings) or (action.dest,)
        default, said = action.default, "(default" in (action.help or "")
        unset = default is None or default is False or default == [] or default == argparse.SUPPRESS
        shown = "" if unset or said or not action.option_strings else str(default)
        metavar = action.metavar if isinstance(action.metavar, str) else ""
        choices = tuple(str(c) for c in action.choices) if action.choices else ()
        helped = re.sub(r"(the cores), \d+\)", r"\1)", action.help or "")  # not the build machine's count
        found.append(Flag(names, shown, helped, choices, bool(action.required), metavar))
    return tuple(found)


def _usage(parser: argparse.ArgumentParser) -> str:
    return " ".join(parser.format_usage().removeprefix("usage: ").split())


def library_commands() -> list[CommandRef]:
    """`python -m transformer_core` and each of its subcommands."""
    from transformer_core.cli import build_parser, installed_commands

    commands = installed_commands()
    parser = build_parser(commands)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    refs = []
    for name, sp in sub.choices.items():
        refs.append(
            CommandRef("python -m transformer_core", name, commands[name].help, _usage(sp), _flags(sp))
        )
    return refs


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


@contextlib.contextmanager
def _intercepted() -> Iterator[None]:
    original = argparse.ArgumentParser.parse_known_args

    def capture(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Parsed(self)

    argparse.ArgumentParser.parse_known_args = capture  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]


def lab_module() -> object | None:
    """`attention_lab.cli`, or None while it does not exist."""
    try:
        return importlib.import_module("attention_lab.cli")
    except ModuleNotFoundError as exc:
        if exc.name in ("attention_lab.cli", "attention_lab"):
            return None
        raise


def lab_commands() -> list[CommandRef]:
    """`attention-lab` (the app, Streamlit flags pass through) and each subcommand."""
    cli = lab_module()
    if cli is None:
        return []
    top = cli.top_parser()  # type: ignore[attr-defined]
    refs = [CommandRef(cli.PROG, "", top.description.split("\n")[0], _usage(top), _flags(top))]  # type: ignore[attr-defined]
    for name, sub in cli.SUBCOMMANDS.items():  # type: ignore[attr-defined]
        with _intercepted():
            try:
                sub.run(["--help"])
            except _Parsed as parsed:
                refs.append(
                    CommandRef(cli.PROG, name, sub.help, _usage(parsed.parser), _flags(parsed.parser))
                )  # type: ignore[attr-defined]
                continue
        raise RuntimeError(f"attention-lab {name}: no argparse parser was built")
    return refs


def all_commands() -> list[CommandRef]:
    return [*lab_commands(), *library_commands()]


def _flag_row(flag: Flag) -> list[str]:
    name = ", ".join(f"`{n}`" for n in flag.names)
    if flag.metavar and flag.names[0].startswith("-"):
        name += f" `{flag.metavar}`"
    what = md_escape(flag.help)
    if flag.choices:
        what = (what + "; " if what else "") + "one of " + ", ".join(f"`{c}`" for c in flag.choices)
    if flag.required and flag.names[0].startswith("-"):
        what = "**required**; " + what
    return [name, f"`{flag.default}`" if flag.default else "", what]


def command_markdown(ref: CommandRef, level: str = "###") -> str:
    parts = [f"{level} `{ref.line}`", "", md_escape(ref.summary), "", f"```text\n{ref.usage}\n```", ""]
    if ref.flags:
        parts += [table(["Argument", "Default", "What it does"], [_flag_row(f) for f in ref.flags]), ""]
    return "\n".join(parts)


def markdown() -> str:
    lab = lab_commands()
    parts = ["## `attention-lab`", ""]
    if lab:
        parts += [
            "Without a command it starts the app and passes every flag on to Streamlit "
            "(`attention-lab --server.port 8080`).",
            "",
        ]
        parts += [command_markdown(ref) for ref in lab]
    else:
        parts += [
            "!!! note",
            "    `attention_lab.cli` is not in this checkout yet: its reference appears here once it is.",
            "",
        ]
    parts += ["## `python -m transformer_core`", ""]
    parts += [
        "Every command with `--json` prints exactly one JSON object on stdout (shapes: "
        "[JSON output](json.md)); an error prints one line on stderr and exits with status 2.",
        "",
    ]
    parts += [command_markdown(ref) for ref in library_commands()]
    return "\n".join(parts)
