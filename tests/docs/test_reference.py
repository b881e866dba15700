"""The reference cannot drift from the code. The generated pages are read from the code, so
these tests check the other direction too: every setting, command, flag, page and URL
parameter the hand-written pages (and README) name exists, and the generators' readings
agree with independent ones (every ATTENTION_LAB_* string in the source; the parameters a
real run of each page hands to init_state)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.docs_support import ROOT, cli_ref, markdown_files, pages_ref, settings_ref

NAME = re.compile(r"ATTENTION_LAB_[A-Z0-9_]*[A-Z0-9]")
LIBRARY = "python -m transformer_core"
PREFIXES = {LIBRARY: LIBRARY, "-m transformer_core": LIBRARY, "attention-lab": "attention-lab"}
LINK = re.compile(r"(?:https?://[^\s/`]+)?/(\w*)\?([\w%.,:&=+<>()\-…]+)")


def links(text: str) -> list[tuple[str, str]]:
    """(page, query) of every app link in a text: `/reversal?text=attention`, with or without
    its address (`http://localhost:8501/reversal?...`), never a path inside a file name."""
    return [
        (m.group(1), m.group(2).rstrip(".,)"))
        for m in LINK.finditer(text)
        if m.start() == 0 or text[m.start() - 1] in " \t\n`(|\"'<>"
    ] + [(None, m.group(1)) for m in BARE.finditer(text)]


BARE = re.compile(r"(?<=[\s`(])\?([a-z]\w*=[\w%.,:&=+<>()\-…]*)")  # `?tour=<name>&scene=<k>`: any page


def documented_text() -> dict[Path, str]:
    return {path: path.read_text() for path in markdown_files()}


# ---------------------------------------------------------------- settings


def test_every_setting_in_the_code_is_in_the_reference_and_back() -> None:
    reference = {s.name for s in settings_ref.read_settings()}
    in_code = settings_ref.all_names_in_code() - set(settings_ref.INTERNAL)
    assert in_code - reference == set(), "read somewhere, missing from the reference"
    assert reference - in_code == set()


def test_the_reference_has_every_setting_that_attention_lab_check_reports() -> None:
    check = pytest.importorskip("attention_lab.deploy.check")
    assert set(check.SETTINGS) <= {s.name for s in settings_ref.read_settings()}


def test_every_setting_the_pages_name_exists() -> None:
    known = settings_ref.all_names_in_code()
    wrong = {
        f"{p.relative_to(ROOT)}: {n}" for p, text in documented_text().items() for n in NAME.findall(text)
    }
    assert {w for w in wrong if w.rsplit(": ", 1)[1] not in known} == set()


# ---------------------------------------------------------------- commands and flags


def commands() -> dict[str, cli_ref.CommandRef]:
    return {ref.line: ref for ref in cli_ref.all_commands()}


def documented_calls(text: str) -> list[tuple[str, list[str]]]:
    """(program, words after it) of every command line in code: fenced lines and inline code."""
    code = re.findall(r"```[^\n]*\n(.*?)```", text, re.S) + re.findall(r"`([^`\n]+)`", text)
    calls = []
    for chunk in code:
        for line in chunk.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0]
            for prefix, program in PREFIXES.items():
                at = line.find(prefix + " ")
                if at >= 0 and (prefix != "attention-lab" or at == 0 or line[at - 1] in " =;$(\"'"):
                    calls.append((program, line[at + len(prefix) :].split()))
                    break
    return calls


def test_every_command_and_flag_the_pages_name_exists() -> None:
    known = commands()
    assert "attention-lab serve" in known or cli_ref.lab_module() is None
    wrong = []
    for path, text in documented_text().items():
        for program, words in documented_calls(text):
            name = next((w for w in words if not w.startswith("-")), "")
            if not re.fullmatch(r"[a-z][\w-]*", name) and name:
                continue  # a placeholder: `python -m transformer_core <command>`, `attention-lab [flags]`
            command = known.get(f"{program} {name}")
            if command is None:
                if program == LIBRARY or (name and cli_ref.lab_module() is not None
                                                               and not words[0].startswith("-")):  # fmt: skip
                    wrong.append(f"{path.relative_to(ROOT)}: {program} {name}")
                continue
            flags = {n for f in command.flags for n in f.names} | {"-h", "--help"}
            for word in words:
                flag = word.split("=")[0]
                if flag.startswith("--") and flag not in flags:
                    wrong.append(f"{path.relative_to(ROOT)}: {command.line} {flag}")
    assert wrong == []


def test_the_cli_reference_lists_every_command_and_flag() -> None:
    text = cli_ref.markdown()
    for command in cli_ref.all_commands():
        assert f"`{command.line}`" in text
        for flag in command.flags:
            assert f"`{flag.names[0]}`" in text, (command.line, flag.names)


# ---------------------------------------------------------------- pages and parameters


def test_the_pages_parameters_are_the_ones_a_real_run_reads() -> None:
    """Each page run once through AppTest, recording what it hands to init_state (as the fuzz
    tests do): the names the reference lists are those, and so are the defaults it shows."""
    fuzz = pytest.importorskip("attention_lab.testing.fuzz")
    listed = {page.file: page for page in pages_ref.read_pages()}
    assert set(fuzz.PAGES) <= set(listed)
    for name in fuzz.PAGES:
        real = fuzz.page_keys(name)
        params = {p.name: p for p in listed[name].params}
        assert set(params) == set(real.names), name
        for key, value in real.defaults.items():
            assert _same(params[key].default, value), (name, key, params[key].default, value)


def _same(shown: str, value: object) -> bool:
    text = shown.split(" (")[0].strip("`")
    if isinstance(value, bool):
        return text == str(value).lower()
    if isinstance(value, list):
        return text == (",".join(map(str, value)) or "empty")
    if isinstance(value, int | float):
        return float(text) == float(value)
    return text == (str(value) or "empty")


def test_every_link_the_pages_show_uses_a_real_page_and_real_parameters() -> None:
    pages = {p.url.strip("/"): {q.name for q in p.params} for p in pages_ref.read_pages()}
    router = set(pages_ref.router_params())
    tours = {p.stem for p in (ROOT / "app" / "tours").glob("*.json")}
    wrong = []
    for path, text in documented_text().items():
        for page, query in links(text):
            if page is None:  # a bare query: parameters every page reads
                wrong += [
                    f"{path.relative_to(ROOT)}: ?{q}"
                    for q in query.split("&")
                    if q.split("=")[0] not in router
                ]
                continue
            if page not in pages:
                wrong.append(f"{path.relative_to(ROOT)}: /{page}")
                continue
            for pair in query.split("&"):
                key, _, value = pair.partition("=")
                if key not in pages[page] | router:
                    wrong.append(f"{path.relative_to(ROOT)}: /{page}?{key}")
                if (
                    key == "tour"
                    and value not in tours
                    and not value.startswith("tour-")
                    and "<" not in value
                ):
                    wrong.append(f"{path.relative_to(ROOT)}: tour {value}")
    assert wrong == []
    assert sum(len(links(t)) for t in documented_text().values()) > 20  # the links were found


def test_the_guides_name_every_command() -> None:
    """A new command shows up in the guide that lists them (research: the library's; the
    README: attention-lab's), not only in the generated reference."""
    research = (ROOT / "docs" / "research.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for command in cli_ref.all_commands():
        if command.program == LIBRARY:
            assert f"`{command.name}`" in research, command.line
        elif command.name:
            assert f"attention-lab {command.name}" in readme, command.line
