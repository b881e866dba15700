"""The one table of Streamlit's DOM hooks (app/static/streamlit_dom.js, read for Python by
attention_lab.frame.streamlit_dom): every hook in it is in the installed Streamlit's frontend
and read by some file of ours; no other file of the app, benchmarks, docs or tests names one;
the Python helpers put the table's selectors in and refuse a name it lacks. The script's own
`part`, in Chromium: tests/browser/test_streamlit_dom.py; the pages that use the hooks
(projector mode, tours, charts, the download) are walked in tests/browser."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import streamlit

from attention_lab.charts import script as chart_script
from attention_lab.frame import present, streamlit_dom
from attention_lab.frame.streamlit_dom import PARTS, fill, inline, keyed, part
from attention_lab.lecture import tours

ROOT = Path(__file__).resolve().parents[2]
HOMES = {streamlit_dom.TABLE, ROOT / "app" / "frame" / "streamlit_dom.py", Path(__file__).resolve()}
# a hook: Streamlit's data- attributes, Playwright's reader of data-testid, a testid ("stMain") in
# quotes, or the class Streamlit gives a keyed element (`keyed(key)`)
HOOK = re.compile(
    r"""data-testid|data-baseweb|data-collapsed|get_by_test_id|["'`]st[A-Z][A-Za-z]+["'`]|st-key-"""
)
# each selector's attribute tests: (attribute, operator, value)
ATTRIBUTE = re.compile(r"\[(data-[a-z-]+)(\^?=)?(?:'([^']*)')?\]")


CODE = {".py", ".js", ".css", ".html", ".template", ".conf"}  # prose (the docs) may name a hook to explain it


def ours() -> list[Path]:
    """Every code file of the app, the benchmarks, the docs' scripts, the deploy files and the tests."""
    found = []
    for folder in ("app", "benchmarks", "docs", "tests", "deploy"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in CODE and path.is_file():
                if "__pycache__" not in path.parts and "vendor" not in path.parts:
                    found.append(path)
    return found


def test_no_other_file_names_a_hook() -> None:
    named = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
        for path in ours()
        if path.resolve() not in HOMES
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if HOOK.search(line)
    ]
    assert named == []
    assert len(ours()) > 300  # the scan saw the project


def test_every_hook_is_in_the_installed_streamlits_frontend() -> None:
    """What an upgrade that renamed a hook breaks is named here, before any page is walked."""
    assert streamlit_dom.missing() == [], (
        f"Streamlit {streamlit.__version__}: mend app/static/streamlit_dom.js"
    )
    for name, selector in PARTS.items():  # each selector is only tests of Streamlit's attributes, read whole
        tests = ATTRIBUTE.findall(selector)
        read = "".join(f"[{a}{op}'{v}']" if op else f"[{a}]" for a, op, v in tests)
        assert tests and selector in (read, f"header{read}"), name


def test_a_hook_streamlit_does_not_write_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a renamed testid, a renamed attribute, a prefix and a built value."""
    table = {
        **PARTS,
        "renamed": "[data-testid='stMainRenamed']",
        "attribute": "[data-sidebar-state='closed']",
        "prefix": "[data-testid^='stNoSuchPrefix']",
    }
    monkeypatch.setattr(streamlit_dom, "PARTS", table)
    assert streamlit_dom.missing() == [
        "renamed: stMainRenamed",
        "attribute: data-sidebar-state",
        "prefix: stNoSuchPrefix",
    ]


def test_every_hook_is_read_somewhere() -> None:
    """The table holds no hook no file reads: `part("name")` in code, `$name` in a stylesheet, a
    list of names mapped by `part`."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in ours() if path.resolve() not in HOMES)
    text += streamlit_dom.TABLE.read_text(encoding="utf-8").split("export function part")[1]
    named = re.findall(r"""part\(["'](\w+)["']\)|\$(\w+)""", text)
    listed = [re.findall(r'"(\w+)"', names) for names in re.findall(r"\[([^\]]*)\]\.map\(part\)", text)]
    unread = set(PARTS) - {name for found in [*named, *listed] for name in found}
    assert unread == set()


def test_the_table_is_read_whole_and_names_each_selector_once() -> None:
    source = streamlit_dom.TABLE.read_text(encoding="utf-8")
    entries = re.findall(r'^  "(\w+)": "([^"]+)",?$', source, re.MULTILINE)
    assert dict(entries) == dict(PARTS) and len(entries) == len(PARTS) >= 40
    assert len(set(PARTS.values())) == len(PARTS)
    assert part("main") == "[data-testid='stMain']" and part("header") == "header[data-testid='stHeader']"
    with pytest.raises(KeyError):
        part("mian")
    with pytest.raises(TypeError):
        PARTS["main"] = "#elsewhere"  # type: ignore[index]


def test_fill_and_inline_put_the_selectors_in_and_refuse_a_name_the_table_lacks() -> None:
    css = fill("$main_block $column:not(:last-child) { gap: 1rem; }")
    assert css == (
        "[data-testid='stMainBlockContainer'] [data-testid='stColumn']:not(:last-child) { gap: 1rem; }"
    )
    with pytest.raises(KeyError):
        fill("$sidebarr { color: red; }")
    js = inline("""$(part("status")) || el.closest(part('code'))""")
    assert js == """$("[data-testid='stStatusWidget']") || el.closest("[data-testid='stCode']")"""
    assert inline("mypart('x') + part (y)") == "mypart('x') + part (y)"  # not a read of the table
    with pytest.raises(KeyError):
        inline('part("nowhere")')


def test_the_stylesheets_and_the_tour_script_carry_the_selectors_not_the_names() -> None:
    for text in (present.CSS, present.LAYOUT_CSS, tours.BAR_CSS, tours.REVEAL_JS):
        assert "$" not in text.replace("${", "") and not re.search(r"""\bpart\(["']""", text)
    assert part("header") in present.CSS and part("caption") in present.LAYOUT_CSS
    assert f"{part('collapsed_sidebar')}, {part('collapsed_sidebar')} *" in present.LAYOUT_CSS
    assert json.dumps(part("status")) in tours.REVEAL_JS and json.dumps(part("header")) in tours.REVEAL_JS


def test_keyed_elements_are_selected_by_streamlits_class_and_checked_in_its_frontend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A keyed widget's or container's element: Streamlit's class for the key as its frontend
    writes it (trimmed, other characters hyphens); inline puts a named key's selector in and
    defines `keyed` for a key the script computes; `missing` names the class if it is gone."""
    assert keyed("tour_bar") == ".st-key-tour_bar" and keyed(" cmp b!") == ".st-key-cmp-b-"
    assert fill("$bar button {}", bar="tour_bar") == ".st-key-tour_bar button {}"
    assert inline('q(keyed("tour_bar"))') == 'q(".st-key-tour_bar")'
    computed = inline("(k) => q(keyed(k))")
    assert computed.startswith("function keyed(key) {") and computed.endswith("\n(k) => q(keyed(k))")
    assert keyed("tour_bar") in present.CSS and keyed("tour_bar") in tours.BAR_CSS
    assert all(keyed(k) in present.LAYOUT_CSS for k in present.INPUT_ROW_KEYS)
    monkeypatch.setattr(streamlit_dom, "KEY_CLASS", "st-no-such-key-")
    assert streamlit_dom.missing() == ["keyed: st-no-such-key-"]


def test_each_bundle_carries_the_table_once() -> None:
    """Without static serving the charts and the download button are one script each: the table
    is in it as a scope, read by `part` and `keyed`, with no import left."""
    for entry in ("charts.js", "save_view.js"):
        code = chart_script.bundled(entry)
        assert code.count("const charts_streamlit_dom = (() => {") == 1
        assert "const { keyed, part } = charts_streamlit_dom;" in code
        assert "return { PARTS, part, keyed };" in code
        assert not re.search(r"^import ", code, re.MULTILINE)
    assert chart_script.version("save_view.js") != chart_script.version()
