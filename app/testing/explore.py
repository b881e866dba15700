"""A class exploring on its own, over the protocol client (attention_lab.testing.protocol): every
page open is a new tab (a new session) on a deep link with its own input drawn, seeded, from
fixed lists (EXPLORE_TEXTS, every shipped checkpoint the page lists, a layer and head within its
shape, switches, sampling settings; 40% /gpt, 30% /reversal, 30% the lessons), and the student
may then change one widget at a time (a new text, another head, a switch), sending every
widget's state as the browser does.

Why a mode of its own: prepared links are cache hits after the first tab; a class trying its own
names is a page run on new input every time, which is what the box has to afford.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from websockets.asyncio.client import ClientConnection

from attention_lab.frame.streamlit_private import BackMsg, Element, ForwardMsg, NumberInput, WidgetState
from attention_lab.testing.protocol import (
    FINISHED_EARLY_FOR_RERUN,
    FINISHED_WITH_COMPILE_ERROR,
    Browser,
    ProtocolError,
    rerun_msg,
)

#: what students type: names and short prompts; /reversal and /variance take their letters
EXPLORE_TEXTS = (
    "Ada Lovelace", "Alan Turing", "Grace Hopper", "Katherine", "Guido", "Linus", "Margaret", "Dorothy",
    "Emmy Noether", "Marie Curie", "Tim", "Barbara", "Niklaus", "Edsger", "Donald", "Radia", "Frances",
    "def main():", "import numpy as np", "for i in range(10):", "return x + y", "The with statement is",
    "print('hello')", "class Point:", "while True:", "if x is None:", "The quick brown fox", "attention",
    "lambda x: x * 2", "open the file", "raise ValueError", "yield from", "self.name = name", "async def",
)  # fmt: skip
#: the pages a class explores and their weights: 40% /gpt, 30% /reversal, 30% the lessons
EXPLORE_MIX = {"/gpt": 4, "/reversal": 3, "/basics": 1, "/positions": 1, "/variance": 1}
#: each page's session_state prefix: its own widgets' keys start with it, the router's do not
PAGE_PREFIX = {"/gpt": "gpt_", "/reversal": "rev_", "/basics": "basics_", "/positions": "positions_"}
PAGE_PREFIX["/variance"] = "variance_"
SWITCH_ODDS = {"nopos": 0.2, "nocausal": 0.2, "nopad": 0.2, "sampled": 0.1}  # each switch, on
MAX_LETTERS = 10  # the word lengths the reversal models were trained on
Draw = Callable[[random.Random], Any]


def letters(text: str) -> str:
    """The letters a-z of `text`, lower case, at most MAX_LETTERS: what /reversal accepts and knows."""
    return "".join(c for c in text.lower() if "a" <= c <= "z")[:MAX_LETTERS]


def grid(low: float, high: float, step: float = 1) -> Draw:
    """A value on a slider's grid, low to high (ints where all three are ints)."""
    count, whole = round((high - low) / step), all(isinstance(x, int) for x in (low, high, step))

    def draw(rng: random.Random) -> float:
        value = low + step * rng.randint(0, count)
        return value if whole else round(value, 6)

    return draw


def flag(rng: random.Random) -> str:
    """A switch as a URL carries it."""
    return rng.choice(("true", "false"))


#: a lesson page's URL inputs and how each is drawn (each open moves three of them)
LESSON_INPUTS: dict[str, dict[str, Draw]] = {
    "/basics": {
        "heads": lambda rng: rng.choice((1, 2, 4)), "q": grid(-5.0, 5.0, 0.1), "k2": grid(-5.0, 5.0, 0.1),
        "house": grid(0.0, 12.0, 0.5), "sigma": grid(0.1, 5.0, 0.05), "width": grid(0.25, 5.0, 0.25),
        "len1": grid(1, 4), "positions": flag,
        "perm": lambda rng: ",".join(map(str, rng.sample(range(4), 4))),
    },
    "/positions": {
        "length": grid(2, 256), "d_model": grid(2, 256, 2), "offset": grid(-25, 25), "rope_pair": grid(0, 7),
        "rope_n": grid(1, 24), "alibi_heads": grid(1, 16), "alibi_len": grid(2, 24), "alibi_content": flag,
    },
    "/variance": {
        "d_k": grid(1, 512), "samples": grid(500, 10000, 500), "keys": grid(2, 64), "no_scaling": flag,
        "scale_text": lambda rng: letters(rng.choice(EXPLORE_TEXTS)), "lr_d_model": grid(16, 1024, 16),
        "warmup": grid(100, 8000, 100), "total": grid(2000, 50000, 1000), "classes": grid(2, 30),
    },
}  # fmt: skip


@dataclass(frozen=True)
class ModelShape:
    """A shipped checkpoint as explorers draw it: its task ("lm": /gpt, "reverse": /reversal), its shape."""

    name: str
    task: str
    layers: int
    heads: int


def shipped_models(python: str = sys.executable, env: Mapping[str, str] | None = None) -> list[ModelShape]:
    """The shipped checkpoints the explorers list (the Transformers: a `config.model` of "transformer"
    or none, as attention_lab.models.resources draws them), from `python -m transformer_core
    checkpoints --json` in a process of its own (`env`: its environment, e.g. another checkout's
    PYTHONPATH; run outside any checkout, whose folder `-m` would put first on the path): a load
    client never imports torch."""
    command = [python, "-m", "transformer_core", "checkpoints", "--json"]
    out = subprocess.run(
        command, capture_output=True, text=True, check=True, env=env, cwd=tempfile.gettempdir()
    )
    found = json.loads(out.stdout)["checkpoints"]
    return [
        ModelShape(c["name"], c["task"], c["config"]["n_layers"], c["config"]["n_heads"])
        for c in found
        if c["task"] in ("lm", "reverse") and c["config"].get("model", "transformer") == "transformer"
    ]


def warm_links(models: Sequence[ModelShape]) -> list[str]:
    """Every model on its explorer and every lesson page: what an app process opens before exploring."""
    pages = {"lm": "/gpt", "reverse": "/reversal"}
    return [f"{pages[m.task]}?checkpoint={m.name}" for m in models] + list(LESSON_INPUTS)


def explore_link(
    rng: random.Random, models: Sequence[ModelShape], mix: dict[str, float] | None = None
) -> str:
    """A new tab's deep link with its own input: a page drawn from `mix` (page -> weight; EXPLORE_MIX
    by default), then its inputs."""
    mix = mix or EXPLORE_MIX
    page = rng.choices(list(mix), weights=list(mix.values()))[0]
    if page in LESSON_INPUTS:
        inputs = LESSON_INPUTS[page]
        params = {name: inputs[name](rng) for name in rng.sample(sorted(inputs), 3)}
    else:
        params = explorer_inputs(
            rng, [m for m in models if m.task == ("lm" if page == "/gpt" else "reverse")]
        )
    return f"{page}?{urlencode(params, quote_via=quote)}"


def explorer_inputs(rng: random.Random, models: Sequence[ModelShape]) -> dict[str, Any]:
    """/gpt's or /reversal's inputs: a checkpoint, a text, a layer and head within the model's shape,
    switches and (/gpt) sampling settings."""
    model, text = rng.choice(models), rng.choice(EXPLORE_TEXTS)
    gpt = model.task == "lm"
    params: dict[str, Any] = {"checkpoint": model.name, "text": text if gpt else letters(text)}
    params.update(layer=rng.randrange(model.layers), head=rng.randrange(model.heads))
    switches = ("nopos", "nocausal", "sampled") if gpt else ("nopos", "nocausal", "nopad")
    params.update({name: "true" for name in switches if rng.random() < SWITCH_ODDS[name]})
    if not gpt:
        return params | ({"second": letters(rng.choice(EXPLORE_TEXTS))} if rng.random() < 0.3 else {})
    params.update(max_new=rng.choice((10, 20, 40, 80, 80, 120, 200)), seed=rng.randrange(10_000))
    params.update(temperature=rng.choice((0.0, 0.5, 0.8, 1.0, 1.3)), top_k=rng.choice((0, 0, 5, 20)))
    params.update(top_p=rng.choice((1.0, 1.0, 0.9, 0.5)))
    if rng.random() < 0.15:
        params["ablate"] = f"{rng.randrange(model.layers)}.{rng.randrange(model.heads)}"
    return params


@dataclass(frozen=True)
class Widget:
    """A widget as a run drew it and the value the browser holds for it. kind: the WidgetState field
    the browser sends it in; options, or low/high/step: what it can be changed to."""

    id: str
    kind: str
    value: Any
    options: tuple[str, ...] = ()
    low: float = 0.0
    high: float = 0.0
    step: float = 1.0

    @property
    def key(self) -> str:
        """Its key (the end of its id), the same across runs and models."""
        return self.id.rsplit("-", 1)[-1]

    def state(self, value: Any) -> WidgetState:
        """The WidgetState a browser sends for this widget holding `value`."""
        state = WidgetState(id=self.id)
        if self.kind == "double_array_value":
            state.double_array_value.data[:] = value
        else:
            setattr(state, self.kind, value)
        return state


def drawn_widget(element: Element, held: dict[str, Widget]) -> Widget | None:
    """The widget an element draws and the value the browser then holds: the one the server set, else
    the one it `held` already, else the widget's default; None for what is no widget a student sets."""
    kind = element.WhichOneof("type")
    if kind not in ("text_input", "text_area", "checkbox", "selectbox", "radio", "slider", "number_input"):
        return None
    w = getattr(element, kind)
    widget = _drawn(kind, w)
    if widget is None or w.set_value or w.id not in held:
        return widget
    return replace(widget, value=held[w.id].value)


def _drawn(kind: str, w: Any) -> Widget | None:
    """The widget of one element's proto (`kind`: its type) with the value it shows."""
    if kind in ("selectbox", "radio"):
        options = tuple(w.options)
        value = w.raw_value if w.set_value else (options[w.default] if options else "")
        return Widget(w.id, "string_value", value, options)
    if kind == "slider":
        value = list(w.value if w.set_value else w.default)
        return None if w.options else Widget(w.id, "double_array_value", value, (), w.min, w.max, w.step)
    value = w.value if w.set_value else w.default
    if kind != "number_input":
        return Widget(w.id, "bool_value" if kind == "checkbox" else "string_value", value)
    field_name = "int_value" if w.data_type == NumberInput.INT else "double_value"
    low, high = (w.min if w.has_min else value - 100), (w.max if w.has_max else value + 100)
    return Widget(w.id, field_name, int(value) if field_name == "int_value" else value, (), low, high, w.step)


@dataclass
class Drawn:
    """One run of an explored page: its widgets by id, exceptions, the URL query it holds, its page."""

    widgets: dict[str, Widget] = field(default_factory=dict)
    exceptions: list[str] = field(default_factory=list)
    query: str = ""
    page_hash: str = ""

    def by_key(self, key: str) -> Widget | None:
        """The widget with this key in this run, None where it drew none."""
        return next((w for w in self.widgets.values() if w.key == key), None)


async def read_drawn(ws: ClientConnection, timeout: float, before: Drawn | None = None) -> Drawn:
    """Read one run to its end (script_finished), keeping its widgets; the URL query and page go on
    from the run `before` where this one did not change them."""
    drawn = Drawn(query=before.query if before else "", page_hash=before.page_hash if before else "")
    held = before.widgets if before else {}
    async with asyncio.timeout(timeout):
        while True:
            msg = ForwardMsg()
            msg.ParseFromString(await ws.recv())
            kind = msg.WhichOneof("type")
            if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                if element.WhichOneof("type") == "exception":
                    drawn.exceptions.append(f"{element.exception.type}: {element.exception.message}"[:300])
                elif widget := drawn_widget(element, held):
                    drawn.widgets[widget.id] = widget
            elif kind == "page_info_changed":
                drawn.query = msg.page_info_changed.query_string
            elif kind == "navigation":
                drawn.page_hash = msg.navigation.page_script_hash or drawn.page_hash
            elif kind == "page_not_found":
                raise ProtocolError(f"page not found: {msg.page_not_found.page_name!r}")
            elif kind == "script_finished" and msg.script_finished != FINISHED_EARLY_FOR_RERUN:
                if msg.script_finished == FINISHED_WITH_COMPILE_ERROR:
                    drawn.exceptions.append("compile error")
                return drawn


def new_value(rng: random.Random, widget: Widget, page: str) -> Any:
    """Another value for `widget`, as a student sets it (None where it has no other)."""
    if widget.kind == "bool_value":
        return not widget.value
    if widget.options:
        others = [o for o in widget.options if o != widget.value]
        return rng.choice(others) if others else None
    if widget.kind == "string_value":
        text = rng.choice(EXPLORE_TEXTS)
        return text if page == "/gpt" else letters(text)
    value = grid(widget.low, widget.high, widget.step)(rng)
    return {"double_array_value": [value], "int_value": int(value)}.get(widget.kind, value)


def pick_change(rng: random.Random, drawn: Drawn, page: str) -> tuple[Widget, Any] | None:
    """One of the page's own widgets and its new value: a new text, another head or layer, a switch
    flipped or another setting, each kind as likely; None where the page drew none to change."""
    own = [w for w in drawn.widgets.values() if w.key.startswith(PAGE_PREFIX[page])]
    heads = [w for w in own if w.key.endswith(("_head", "_layer"))]
    texts = [w for w in own if w.kind == "string_value" and not w.options]
    switches = [w for w in own if w.kind == "bool_value"]
    others = [w for w in own if w not in heads + texts + switches]
    for _ in range(8):
        group = rng.choice([g for g in (texts, heads, switches, others) if g] or [[]])
        if not group:
            return None
        widget = rng.choice(group)
        value = new_value(rng, widget, page)
        if value is not None and value != widget.value:
            return widget, value
    return None


def widget_change(page: str, drawn: Drawn, widget: Widget, value: Any) -> bytes:
    """The BackMsg a browser sends when `widget` gets `value`: the page's URL, and every widget's state."""
    msg = BackMsg()
    msg.ParseFromString(rerun_msg(f"{page}?{drawn.query}", page_hash=drawn.page_hash))
    states = msg.rerun_script.widget_states.widgets
    states.extend(w.state(value if w.id == widget.id else w.value) for w in drawn.widgets.values())
    return msg.SerializeToString()


@dataclass
class ExploreTally:
    """What explorers did: seconds per page open (HTML request to script_finished) and per widget
    change (BackMsg to script_finished), the links opened and changes sent, how many of them the
    page took (its URL carried the drawn checkpoint and text; the next run showed the new value),
    exceptions drawn and errors (HTTP, websocket, timeouts)."""

    opens: list[float] = field(default_factory=list)
    changes: list[float] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    explorer_opens: int = 0
    echoed: int = 0
    checkable: int = 0  # changes of a widget whose value the page's URL carries
    applied: int = 0
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def note_open(self, link: str, drawn: Drawn, seconds: float) -> None:
        """Keep a page open's time, exceptions and whether its URL took the drawn input."""
        self.opens.append(seconds)
        self.exceptions.extend(f"{link}: {e}" for e in drawn.exceptions)
        page, _, query = link.partition("?")
        if page in ("/gpt", "/reversal"):
            asked, shown = parse_qs(query), parse_qs(drawn.query)
            self.explorer_opens += 1
            self.echoed += all(asked[k] == shown.get(k) for k in ("checkpoint", "text"))

    def note_change(self, name: str, value: Any, before: Drawn, after: Drawn, seconds: float) -> None:
        """Keep a widget change's time and exceptions, and whether the page took it: the URL parameter
        `name` changed with it or now holds `value`."""
        self.changes.append(seconds)
        self.changed.append(f"{name}={value}")
        self.exceptions.extend(f"{name}={value}: {e}" for e in after.exceptions)
        old, new = parse_qs(before.query).get(name), parse_qs(after.query).get(name)
        if old is None and new is None:
            return
        self.checkable += 1
        want = str(value[0] if isinstance(value, list) else value).lower()
        self.applied += new != old or (new is not None and new[0].lower() in (want, want.removesuffix(".0")))

    def merge(self, other: ExploreTally) -> None:
        """Add another client's tally to this one."""
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)


async def visit(
    browser: Browser, rng: random.Random, link: str, changes: int, timeout: float, tally: ExploreTally
) -> None:
    """Open `link` as a new tab does (a new session), then change `changes` widgets one at a time."""
    page = link.partition("?")[0]
    started = time.perf_counter()
    status, _ = await browser.get(link, timeout)
    if status != 200:
        raise ProtocolError(f"GET {link}: HTTP {status}")
    async with browser.connect() as ws:
        await ws.send(rerun_msg(link))
        drawn = await read_drawn(ws, timeout)
        tally.note_open(link, drawn, time.perf_counter() - started)
        for _ in range(changes):
            picked = pick_change(rng, drawn, page)
            if picked is None:
                return
            widget, value = picked
            started = time.perf_counter()
            await ws.send(widget_change(page, drawn, widget, value))
            drawn.widgets[widget.id] = replace(widget, value=value)  # what the browser holds now
            after = await read_drawn(ws, timeout, drawn)
            name = widget.key.removeprefix(PAGE_PREFIX[page])
            tally.note_change(name, value, drawn, after, time.perf_counter() - started)
            drawn = after


async def explore(
    base: str,
    models: Sequence[ModelShape],
    users: Sequence[int],
    stop_at: float,
    changes: int = 0,
    timeout: float = 60.0,
    max_pages: int = 10**9,
    seed: int | str = 0,
    mix: dict[str, float] | None = None,
    open_tabs: int = 0,
) -> ExploreTally:
    """Closed-loop explorers, one per number in `users` (its seed with `seed`), each its own browser,
    until time.monotonic() passes `stop_at` or each opened `max_pages` pages (a visit under way ends);
    `mix`: the pages and their weights (EXPLORE_MIX by default); `open_tabs`: tabs on / left open
    meanwhile, as students leave them (Streamlit clears its compiled scripts whenever an app
    process has no session left)."""
    tally = ExploreTally()

    async def student(user: int) -> None:
        browser, rng = Browser(base), random.Random(f"{seed}-{user}")
        for _ in range(max_pages):
            if time.monotonic() >= stop_at:
                return
            link = explore_link(rng, models, mix)
            tally.links.append(link)
            try:
                await visit(browser, rng, link, changes, timeout, tally)
            except Exception as exc:  # noqa: BLE001 - counted and shown
                tally.errors.append(f"{link}: {type(exc).__name__}: {exc}"[:300])

    async with contextlib.AsyncExitStack() as stack:
        for _ in range(open_tabs):
            tab = Browser(base)
            await tab.get("/", timeout)
            ws = await stack.enter_async_context(tab.connect())
            await ws.send(rerun_msg("/"))
            await read_drawn(ws, timeout)
        await asyncio.gather(*(student(user) for user in users))
    return tally


def explore_process(
    base: str, models: list[ModelShape], users: list[int], start_at: float, duration: float, **options: Any
) -> tuple[ExploreTally, float, float]:
    """One load client process: sleeps until time.time() reaches `start_at`, explores for `duration`
    seconds (options: explore()'s), then returns its tally, wall seconds and its own CPU seconds
    (this process, user + system), so that a server's figures stay the server's."""
    time.sleep(max(0.0, start_at - time.time()))
    wall, cpu = time.perf_counter(), time.process_time()
    stop_at = time.monotonic() + duration
    tally = asyncio.run(explore(base, models, users, stop_at, **options))
    return tally, time.perf_counter() - wall, time.process_time() - cpu
