"""Property-based fuzzing of every page through AppTest (issue 27 #1), shared by
tests/app/test_fuzz_pages.py (a bounded number of cases per page, for CI) and
benchmarks/fuzz_pages.py (20,000 cases over all pages). The value strategies need Hypothesis
(the `test` extra), imported when a strategy is asked for; the properties need only Streamlit.

The URL keys of a page are the real ones: a bare run of the page records what it hands to
`attention_lab.frame.state.init_state` (names, defaults, prefix), and `st.query_params` names in its source
(/train's `run`) are read with `ast`. A link is then fuzzed with values for those keys
(in range, out of range, huge, nan, unicode, control characters, 10,000 characters) and
unknown keys, and `check_link` asserts the properties of README.md: no exception, every value
the page did not keep is named in a notice, and the URL afterwards only holds accepted values.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from streamlit.testing.v1 import AppTest

from attention_lab.frame import state
from attention_lab.testing.apptest import quiet_streamlit, share_script_cache

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

PACKAGE = Path(__file__).resolve().parents[1]  # app/, the attention_lab package
ROOT = PACKAGE.parent  # the checkout: its checkpoints/ name the shipped models
HOME = str(PACKAGE / "Home.py")
PAGES = (
    "home",
    "gpt",
    "reversal",
    "compare",
    "bert",
    "heads",
    "basics",
    "positions",
    "variance",
    "cost",
    "train",
)
ROUTER_KEYS = ("present", "tour", "scene", "follow")  # read by the router on every page
NOTICE_KINDS = ("info", "warning", "error")
# what a page says of a text it cannot take: explorers.model_input (empty, too long), /heads's probe
INPUT_PROBLEM = ("The input ", "The probe text ")
TEXT_KEYS = ("text", "probe")


@dataclass(frozen=True)
class PageKeys:
    """What a page reads from its URL: init_state's keys (name -> default) under `prefix`,
    and the names its source reads from st.query_params directly."""

    prefix: str
    defaults: dict[str, Any]
    direct: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return (*self.defaults, *self.direct)


def direct_params(page: str) -> tuple[str, ...]:
    """Literal names the page's source reads from st.query_params (`.get("run")`, `["run"]`)."""
    tree = ast.parse((PACKAGE / "views" / f"{page}.py").read_text())
    found = []
    for node in ast.walk(tree):
        target, arg = None, None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            target, arg = node.func.value, node.args[0]
        elif isinstance(node, ast.Subscript):
            target, arg = node.value, node.slice
        if (
            isinstance(target, ast.Attribute)
            and target.attr == "query_params"
            and isinstance(arg, ast.Constant)
            and isinstance(arg.value, str)
        ):
            found.append(arg.value)
    return tuple(dict.fromkeys(found))


def open_page(page: str, params: dict[str, str]) -> AppTest:
    """The router switched to app/views/<page>.py, run once with `params` as its link (every
    page script compiled once in this process, as a server does)."""
    share_script_cache()
    at = AppTest.from_file(HOME, default_timeout=300)
    quiet_streamlit()
    at.run()
    at.switch_page(f"views/{page}.py")
    at.query_params = dict(params)
    return at.run()


@functools.cache
def page_keys(page: str) -> PageKeys:
    """The page's URL keys, recorded from its init_state calls on a bare run."""
    calls: list[tuple[str, dict[str, Any]]] = []
    original = state.init_state

    def recording(defaults: dict[str, Any], valid: Any = None, *, prefix: str = "") -> None:
        calls.append((prefix, dict(defaults)))
        original(defaults, valid, prefix=prefix)

    state.init_state = recording  # type: ignore[assignment]
    try:
        at = open_page(page, {})
    finally:
        state.init_state = original  # type: ignore[assignment]
    assert not at.exception, [e.value for e in at.exception]
    prefixes = {prefix for prefix, _ in calls}
    assert len(prefixes) <= 1, prefixes
    defaults = {name: value for _, call in calls for name, value in call.items()}
    return PageKeys(next(iter(prefixes), ""), defaults, direct_params(page))


# ---------------------------------------------------------------- value strategies
CHECKPOINTS = sorted(p.name for p in (ROOT / "checkpoints").iterdir() if (p / "config.json").exists())
WORDS = [
    *CHECKPOINTS,
    *("self", "cross", "encoder_self", "decoder_self", "previous_token", "induction", "best score"),
    *("self:0.1", "cross:1.0", "0.1", "1.2,0.0", "0,3,2,1", "0,8,14,20", "attention", "The with"),
    *("run-0", "run-../../etc/passwd", "../../etc/passwd", "true", "false", "on", "no"),
]
SPECIAL = [
    *("", " ", "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "-0", "-0.0"),
    *("0x10", "1_000", "٣", "１２", "²", " 3 ", "3.0", "+3", "--3", "3,4", ",", ",,,", "0,", "%00"),
    *(str(2**31), str(2**63), str(10**30), str(-(10**30)), "9" * 400),
]
UNICODE = ["😀", "👩‍👩‍👧", "مرحبا", "שלום", "\u202e", "\u200b", "\ufeff", "ß", "İ", "\ud7ff"]
UNKNOWN_KEYS = ["foo", "Layer", "layer ", "a b", "x_y", "😀", "__proto__", "text[]", "q"]


def _text() -> SearchStrategy[str]:
    from hypothesis import strategies as st

    controls = st.text(
        st.characters(min_codepoint=0, max_codepoint=0x1F) | st.just("\x7f"), min_size=1, max_size=3
    )
    pieces = st.text(max_size=12) | st.sampled_from(UNICODE) | controls | st.sampled_from(WORDS)
    return st.lists(pieces, max_size=4).map("".join)


def garbage() -> SearchStrategy[str]:
    """Text a link should never be able to break a page with."""
    from hypothesis import strategies as st

    long = st.sampled_from(["x", "9", "é", "😀", "\x00", "a,"]).map(lambda c: c * 10_000)
    return _text() | st.sampled_from(SPECIAL) | long


def _number(value: float) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def value_for(default: Any) -> SearchStrategy[str]:
    """Raw URL values for a key with this default: valid-looking ones of its type, and garbage."""
    from hypothesis import strategies as st

    ints = st.integers(-(10**6), 10**6) | st.integers(-3, 300) | st.integers(-(2**70), 2**70)
    floats = st.floats(allow_nan=True, allow_infinity=True) | st.floats(-30, 30)
    if isinstance(default, bool):
        typed = st.sampled_from(["1", "0", "true", "false", "yes", "no", "on", "off", "TRUE", "Yes"])
    elif isinstance(default, int):
        typed = ints.map(_number)
    elif isinstance(default, float):
        typed = (floats | ints).map(_number)
    elif isinstance(default, list):
        typed = st.lists(ints.map(str) | _text(), max_size=8).map(",".join)
    else:
        typed = st.sampled_from([str(default), *WORDS])
    return st.one_of(typed, typed, garbage())


def links(page: str) -> SearchStrategy[dict[str, str]]:
    """Links to the page: some of its keys, maybe router keys, maybe unknown ones."""
    from hypothesis import strategies as st

    @st.composite
    def link(draw: st.DrawFn) -> dict[str, str]:
        keys = page_keys(page)
        known = draw(st.lists(st.sampled_from(keys.names), unique=True)) if keys.names else []
        params = {name: draw(value_for(keys.defaults.get(name, ""))) for name in known}
        for name in draw(st.lists(st.sampled_from(UNKNOWN_KEYS), unique=True, max_size=2)):
            if name not in keys.names:
                params[name] = draw(garbage())
        if draw(st.booleans()):
            params[draw(st.sampled_from(ROUTER_KEYS))] = draw(garbage())
        return params

    return link()


# ---------------------------------------------------------------- the properties
def notices(at: AppTest) -> list[str]:
    """Every visible notice of the run (st.info, st.warning, st.error), as Markdown."""
    return [str(n.value) for kind in NOTICE_KINDS for n in at.get(kind)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _named(name: str, raw: str, parsed: Any, said: list[str]) -> bool:
    """Whether a notice names the link's `name` with its value (as given, or as parsed)."""
    forms = {state.shown(raw)} | ({state.shown(state.format_value(parsed))} if parsed is not None else set())
    if name in TEXT_KEYS and any(n.startswith(INPUT_PROBLEM) for n in said):
        return True  # attention_lab.explorers.model_input names what is wrong with the prompt in the box
    if raw.startswith("run-") and any("The link's model cannot be opened" in n for n in said):
        return True  # attention_lab.models.resources: an unknown run id, explained once
    # a value holding a backtick is fenced with two (md_code): "`` name=a`b ``"
    starts = [f"`{name}={form}" for form in forms] + [f"`` {name}={form}" for form in forms] + [f"`{name}`: "]
    return any(start in n for n in said for start in starts)


def link_problems(page: str, params: dict[str, str], at: AppTest) -> list[str]:
    """What is wrong with the page's run on `params`: [] when every property holds."""
    if at.exception:
        return [f"exception: {e.value}" for e in at.exception]
    keys, said, url = page_keys(page), notices(at), at.query_params
    problems = []
    for name, raw in params.items():
        after = url.get(name)
        if name in keys.defaults:
            key = keys.prefix + name
            try:
                parsed = state.cast_value(raw, keys.defaults[name])
            except (ValueError, TypeError):
                parsed = None
            used = at.session_state[key] if key in at.session_state else None
            accepted = parsed is not None and _same(used, parsed)
            if name in TEXT_KEYS and any(n.startswith(INPUT_PROBLEM) for n in said):
                accepted = False
            canonical = None if used is None else state.format_value(used)
            # `sort=` or the default itself: the page's own choice (clamp_state: "" is no choice yet)
            asked_default = raw in ("", state.format_value(keys.defaults[name]))
            if not accepted and not asked_default and not _named(name, raw, parsed, said):
                problems.append(f"{name}={raw[:60]!r} not kept ({canonical!r}) and named in no notice")
            if after is not None and after != canonical and not (accepted and after == raw):
                problems.append(f"{name}: the URL holds {after[:60]!r}, not an accepted value")
        elif name in keys.direct:
            if raw and not any(state.shown(raw) in n for n in said):
                problems.append(f"{name}={raw[:60]!r} named in no notice")
            if raw and after == raw:
                problems.append(f"{name}={raw[:60]!r} kept in the URL")
        elif name not in ROUTER_KEYS and after is not None:
            problems.append(f"unknown {name}={raw[:60]!r} kept in the URL")
    return problems


#: page -> (widget kind, its URL name) of the free-text inputs a user types into
TEXT_WIDGETS = {
    "gpt": ("text_area", "text"),
    "reversal": ("text_input", "text"),
    "compare": ("text_input", "text"),
    "bert": ("text_area", "text"),
    "heads": ("text_input", "probe"),
    "variance": ("text_input", "scale_text"),
    "basics": ("text_input", "token_text"),
}


def typed_problems(page: str, value: str, at: AppTest) -> list[str]:
    """Type `value` into the page's text input (`at` has run once): no exception, and the URL
    then holds the typed text only if the page took it, else what it held before."""
    kind, name = TEXT_WIDGETS[page]
    widget = getattr(at, kind)(key=page_keys(page).prefix + name)
    before = at.query_params.get(name, widget.value)  # a bare first visit's URL stays bare
    limit = getattr(widget.proto, "max_chars", 0)
    at = widget.input(value[:limit] if limit else value).run()
    typed = value[:limit] if limit else value
    if at.exception:
        return [f"exception: {e.value}" for e in at.exception]
    after, said = at.query_params.get(name), notices(at)
    refused = any(n.startswith(INPUT_PROBLEM) for n in said)
    allowed = {before} if refused else {typed} | ({None} if typed == "" else set())
    if after not in allowed:
        return [f"typed {typed[:60]!r}: the URL holds {str(after)[:60]!r} (before {str(before)[:60]!r})"]
    return []
