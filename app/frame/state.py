"""Per-session view state, in one place: the URL mirror of each page (the widgets keep
their own values across page visits: `persist_state="session"`).

Widget keys with no value yet are seeded from the URL (else their default); on every
run the current widget values are written back to the URL, so a copied link reopens the view.

A page may give a `prefix`: the session_state key is then prefix + name while the URL
keeps the short name (`/reversal?text=hello`), so two pages never share a widget key.
List values (multiselect) travel as one comma-separated parameter.

Every keyed input widget of a page is drawn with `persist_state="session"`: Streamlit then
copies its value onto its key whenever a run does not draw it (another page is shown, the
page stopped before drawing it, or a fragment run of /train's live panel lands while another
page is shown: the stale-widget cleanup keeps session-scoped values), and a widget that comes
back is sent that value. A key init_state seeds before its widget was ever drawn (a page
stopped on its first visit) is plain session state, which Streamlit never drops. This replaced
the router's own keeping (re-assigning every seeded key when a page was entered or stopped
early, with copies for /train's form); the browser tests of issue 11 (tests/browser/
test_state.py, test_train.py) pass without it. What stays custom is only what persist_state
does not do: when a page is entered (sidebar, link, the browser's Back) the parameters in its
URL win over the kept values (`enter_page` notes the entry, `init_state` re-seeds); on reruns
of the page shown, the widgets do. A value from a link that cannot be used is named in a
notice, never dropped silently.

Why not Streamlit's own `bind="query-params"` (1.67): it uses the widget key as the URL
name, so /gpt and /reversal would share one session key `text` (and `checkpoint`, `layer`,
`head`) across pages while links must keep the short names; it drops a parameter equal to
its default (a link must keep `layer=0&temperature=0.8` once a page wrote them), clears an
invalid value without a word (a link's unusable values are named in a notice here), and
writes a committed value to the URL before the page has accepted it (a rejected
10,000-character prompt must not reach the URL); bound parameters also cannot be written
through st.query_params, which `present=1` and the sidebar's per-page links need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

import streamlit as st

from attention_lab.frame.markdown_safe import md_code, md_text, shown, visible  # noqa: F401 (pages import them from here)

LINKS = "_view_links"  # session_state: page url_path -> the parameters its URL had last
FIRST = "_view_first_run"  # session_state: this run opens a page never shown, by a bare URL
EXPLAINED = "_view_explained"  # session_state: link parameters a notice of this run explained
PAGE, ENTERED = "_view_page", "_view_entered"  # the page shown last; whether this run opens a page
REOPEN = "_view_reopen"  # session_state: the next run opens its page afresh, from its URL (class, tours)
PENDING = "_view_pending"  # session_state: what this run's URL mirrors (write_state -> write_url)
LATER = "_view_later"  # session_state: keys whose unusable link values the page names (name_later)
IGNORED = "_view_ignored"  # session_state: those values, key -> the link's text (take_ignored)
CARRIED = "_view_carried"  # session_state: parameters every URL of this run carries (a tour's scene)
LINK_NOTICE_KEY = "link_notice"  # a run's first notice of a link's unusable values (clear of the header)
NOTICED = "_view_noticed"  # session_state: this run has shown such a notice (its key is taken)


def cast_value(raw: str, default: Any) -> Any:
    """A URL value read as its default's type (ValueError where it does not parse)."""
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    if isinstance(default, list):
        return [item for item in raw.split(",") if item]
    return raw


def format_value(value: Any) -> str:
    """A value as its URL writes it (and a notice names it)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def init_state(
    defaults: dict[str, Any],
    valid: dict[str, Callable[[Any], bool]] | None = None,
    *,
    prefix: str = "",
) -> None:
    """Seed each widget key from the page's URL when the page is entered (or the key has no
    value yet), else keep the session's value; a key never seen starts at its default.

    URL values that do not parse or fail their `valid` check are named in one notice and
    the value in use is kept; keys given to `name_later` are left to the page to name.
    """
    valid = valid or {}
    later = st.session_state.get(LATER, set())
    pending: dict[str, str] = st.session_state.setdefault(IGNORED, {})
    for key in later:  # a value from an earlier run that nobody named is stale now
        pending.pop(key, None)
    entered = st.session_state.get(ENTERED, True)
    ignored = []
    for name, default in defaults.items():
        key = prefix + name
        from_url = name in st.query_params
        if key in st.session_state and not (entered and from_url):
            continue
        value = st.session_state.get(key, default)
        if from_url:
            raw = st.query_params[name]
            try:
                parsed = cast_value(raw, default)
                if name in valid and not valid[name](parsed):
                    raise ValueError(raw)
                value = parsed
            except (ValueError, TypeError):
                if key in later:
                    pending[key] = raw
                elif name not in st.session_state.get(EXPLAINED, ()):
                    ignored.append((name, raw, value))
        st.session_state[key] = value
    if ignored:
        first = not st.session_state.get(NOTICED, False)  # the one that may open the page, above its title
        st.session_state[NOTICED] = True
        (st.container(key=LINK_NOTICE_KEY) if first else st).warning(
            "Ignored from the link: "
            + "; ".join(
                f"{md_code(f'{name}={shown(raw)}')} (showing {md_text(format_value(used)) or 'none'})"
                for name, raw, used in ignored
            )
            + ". Those values are not valid here.",
            icon=":material/link_off:",
        )


def name_later(*keys: str) -> None:
    """Leave the notice for these keys' unusable link values to the page (call before
    init_state): it names them once it can say what is shown instead in words (a position by
    its character and place, not by an index), with `take_ignored`."""
    st.session_state[LATER] = set(keys)


def take_ignored(key: str) -> str | None:
    """The link's value for `key` that init_state could not use and left to the page to name
    (name_later), once; None when there is none."""
    return st.session_state.get(IGNORED, {}).pop(key, None)


def clamp_state(key: str, options: list[Any], default: Any, why: str = "for this model") -> None:
    """Keep a selector's state inside its options (a link or a checkpoint switch can ask for
    more than there is), saying so, and `why`, when a value had to go."""
    value = st.session_state.get(key)
    if value not in options:
        if value not in (None, ""):  # "": nothing chosen yet (a page's default), nothing to say
            name = key.split("_", 1)[-1]
            st.info(
                f"{md_code(f'{name}={shown(str(value))}')} is not available {why}; showing {default}.",
                icon=":material/info:",
            )
        st.session_state[key] = default


def resolve_auto(
    key: str, options: list[Any], auto: Any, marker: Any = -1, why: str = "for this model"
) -> None:
    """A selector whose state (or link) says `marker` ("the page's choice") gets `auto`; any other
    value outside its options is named by clamp_state."""
    if st.session_state.get(key) == marker:
        st.session_state[key] = auto
    clamp_state(key, options, auto, why)


def clamp_list_state(key: str, options: list[str], default: list[str], at_most: int) -> None:
    """Keep a multiselect's state to its options (at most `at_most`), naming what had to go;
    with nothing left, the page's default (what it can show of it)."""
    value = [str(v) for v in st.session_state.get(key, [])]
    kept = [v for v in value if v in options][:at_most]
    if kept != value:
        name, gone = key.split("_", 1)[-1], [v for v in value if v not in kept]
        kept = kept or [v for v in default if v in options][:at_most] or options[:1]
        st.info(
            f"`{name}`: {md_text(', '.join(shown(v) for v in gone))} not available here; "
            f"showing {', '.join(kept)}.",
            icon=":material/info:",
        )
    st.session_state[key] = kept


def enter_page(page: str) -> None:
    """The router calls this on every run, before the page: note whether the run opens a
    page or reruns the one shown (the widgets keep their own values: persist_state)."""
    entered = st.session_state.get(PAGE) != page or bool(st.session_state.pop(REOPEN, False))
    st.session_state[ENTERED] = entered
    st.session_state[EXPLAINED] = set()
    st.session_state[NOTICED] = False
    st.session_state.pop(PENDING, None)
    # a bare first visit shows the defaults: its URL stays bare (see write_state)
    st.session_state[FIRST] = (
        entered and page not in st.session_state.get(LINKS, {}) and set(st.query_params) <= {"present"}
    )
    st.session_state[PAGE] = page


def carry(params: dict[str, str]) -> None:
    """The router's parameters for every URL this run writes (a tour's scene while it is on)."""
    st.session_state[CARRIED] = params


def written(page: str) -> dict[str, str]:
    """The parameters `page` last wrote to its URL (without projector mode or a tour's scene),
    else the URL's own: the view a lecturer's class is sent once the run is over."""
    links = st.session_state.get(LINKS, {})
    return dict(links[page]) if page in links else dict(st.query_params)


def explained(name: str) -> None:
    """A notice of this run has already said why the link's `name` cannot be used (e.g. an
    expired run id): init_state then does not name it a second time."""
    st.session_state.setdefault(EXPLAINED, set()).add(name)


def write_state(keys: list[str], *, prefix: str = "", keep: tuple[str, ...] = ()) -> None:
    """Say which session_state keys (names without prefix) the page's URL mirrors; the names
    in `keep` keep the value the page's URL last held from this session, or none (an input not
    accepted yet never reaches the URL, nor does a link's input the page refused). The
    router writes the URL once, when the page's run is over (`write_url`): a page calls this
    again once more of its input is accepted, and the last call before the run ends counts."""
    st.session_state[PENDING] = (tuple(keys), prefix, tuple(keep))


def stop() -> NoReturn:
    """Stop the page here, its URL written first: Streamlit runs no other call of the run
    after st.stop, the router's included."""
    write_url()
    st.stop()


#: what else happens once a run's URL is written, by name (the router hands in the class's
#: share: the lecturer's view goes to the class). Functions only, set once per process.
AFTER_WRITE: dict[str, Callable[[str, dict[str, str]], None]] = {}


def after_write(name: str, hook: Callable[[str, dict[str, str]], None]) -> None:
    """Run hook(page, params) after every run's URL write (set again by every run: idempotent)."""
    AFTER_WRITE[name] = hook


def write_url() -> None:
    """Write the URL the page asked for (write_state), once per run, stopped or not; then the
    AFTER_WRITE hooks see the page and what it wrote."""
    pending = st.session_state.pop(PENDING, None)
    page = st.session_state.get(PAGE, "")
    if pending is not None:
        _write(page, *pending)
    for hook in AFTER_WRITE.values():
        hook(page, written(page))


def _write(page: str, keys: tuple[str, ...], prefix: str, keep: tuple[str, ...]) -> None:
    links: dict[str, dict[str, str]] = st.session_state.setdefault(LINKS, {})
    last = links.get(page, {})
    params = {}
    for name in keys:
        value = st.session_state.get(prefix + name)
        if name in keep:  # the value this page last accepted (a link's own may be the rejected one)
            kept = last.get(name)
            if kept is not None:
                params[name] = kept
            continue
        if value is None:
            continue
        params[name] = format_value(value)
    links[page] = dict(params)
    if st.session_state.get(FIRST):
        # the URL of a bare first visit stays bare, so that opening a page is one history entry
        # (a write now could land before the browser has left the last page)
        return
    if st.session_state.get("present"):  # projector mode travels with every link (frame.present)
        params["present"] = "1"
    params.update(st.session_state.get(CARRIED, {}))  # so does a tour's scene while it is on
    if dict(st.query_params) != params:  # every change is a new entry in the browser's history
        st.query_params.from_dict(params)


def page_links(sections: dict[str, list[Any]]) -> None:
    """The sidebar menu (st.navigation's own is hidden): each page's link carries the
    parameters that page last wrote, so opening it is one entry in the browser's history
    and Back returns with one press (the built-in menu opens the bare page first, and the
    page's own parameters then add a second entry)."""
    with st.sidebar.container(gap=None):
        for section, pages in sections.items():
            if section:
                st.caption(section)
            for page in pages:
                st.page_link(page, query_params=link_params(page.url_path))


def link_params(url_path: str) -> dict[str, str]:
    """The query parameters of a link to a page: the view that page last wrote in this
    session (none if it was never shown), and present=1 in projector mode."""
    present = {"present": "1"} if st.session_state.get("present") else {}
    return {**st.session_state.get(LINKS, {}).get(url_path, {}), **present}
