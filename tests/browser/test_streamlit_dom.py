"""The scripts' own `part` (app/static/streamlit_dom.js) in Chromium: it reads the table Python
reads and throws on a name the table lacks, and its `keyed` selects as Python's does; the download
button's script, bundled with it for a server without static serving, finds Streamlit's elements
by it in a page built as Streamlit's."""

from __future__ import annotations

import re

from playwright.sync_api import Browser

from attention_lab.charts import script as chart_script
from attention_lab.frame import streamlit_dom
from attention_lab.frame.streamlit_dom import PARTS, keyed, part

IMPORT = """async (code) => {
    const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    return await import(url);
}"""


def test_the_scripts_part_reads_the_same_table_and_throws_on_a_name_it_lacks(browser: Browser) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        read = page.evaluate(
            IMPORT.replace(
                "return await import(url);",
                """const m = await import(url);
            let thrown = "";
            try { m.part("mian"); } catch (e) { thrown = e.message; }
            const keys = ["tour_bar", " a b!", "gpt_self_grid", "é-x"];
            return { parts: m.PARTS, main: m.part("main"), thrown, keyed: keys.map(m.keyed) };""",
            ),
            streamlit_dom.TABLE.read_text(encoding="utf-8"),
        )
    finally:
        context.close()
    assert read["parts"] == dict(PARTS) and read["main"] == part("main")
    assert read["thrown"] == 'no Streamlit part named "mian"'
    assert read["keyed"] == [keyed(k) for k in ("tour_bar", " a b!", "gpt_self_grid", "é-x")]


# Streamlit's page as 1.67 builds it, cut down to what the download reads: an element container
# each, a heading, text with an icon's ligature, a multiselect (its tags a flex row), a selectbox
# (its value in a combobox input) and a slider; {name}: that element's hook from the table
PAGE = """<div {main}>
  <div {element}><div {heading}><h1>Heads</h1></div></div>
  <div {element}><div {markdown}><p>Ready <span {icon}>check_circle</span></p></div></div>
  <div {element}><div {multiselect}><label {widget_label}>Ablate heads</label>
    <div {multiselect_tags} style="display: flex">
      <span><span>L0 H1</span></span><span><span>L1 H0</span></span><input value=""></div></div></div>
  <div {element}><div {selectbox}><label {widget_label}>Checkpoint</label>
    <input role="combobox" value="gpt-rope"></div></div>
  <div {element}><div {slider}><label {widget_label}>Layer</label>
    <div role="slider" aria-valuenow="1"></div></div></div>
</div><div id="host"></div>"""


def attribute(name: str) -> str:
    """The hook of the table's element `name` as the element's own attribute (a prefix's value
    completed as Streamlit completes it: stIcon -> stIconMaterial)."""
    (name_, operator, value), *_ = re.findall(r"\[([\w-]+)(\^?=)'([^']*)'\]", part(name))
    return f'{name_}="{value}{"Material" if operator == "^=" else ""}"'


SAVE = """async (code) => {
    const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
    const mount = (await import(url)).default;
    let saved = null;
    URL.createObjectURL = (blob) => { saved = blob; return "blob:saved"; };
    URL.revokeObjectURL = () => {};
    HTMLAnchorElement.prototype.click = () => {};
    const parentElement = document.getElementById("host");
    const shell = "<h1><!--lab:title--></h1><main><!--lab:body--></main>";
    mount({ data: { shell, nav: "" }, parentElement, setTriggerValue: () => {} });
    parentElement.querySelector("button.lab-save-page").click();
    for (let i = 0; i < 50 && !saved; i++) await new Promise((done) => setTimeout(done, 20));
    return saved && (await saved.text());
}"""


def test_the_bundled_download_script_finds_the_page_by_the_table(browser: Browser) -> None:
    """The download button's script bundled with the table (a server without static serving)
    loads, and its download of a page as Streamlit builds it has the title, the text without the
    icon's ligature, and each widget as "label: value", a multiselect's picks too."""
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content(PAGE.format(**{name: attribute(name) for name in PARTS if name != "any_part"}))
        saved = page.evaluate(SAVE, chart_script.bundled("save_view.js"))
    finally:
        context.close()
    assert errors == [] and saved is not None
    assert saved.startswith("<h1>Heads · </h1><main>") and "<h1>Heads</h1>" in saved
    assert "Ready" in saved and "check_circle" not in saved
    for line in ("Ablate heads: L0 H1, L1 H0", "Checkpoint: gpt-rope", "Layer: 1"):
        assert f'<p class="lab-note">{line}</p>' in saved, saved
