"""The scripts' own `part` (app/static/streamlit_dom.js) in Chromium: it reads the table Python
reads and throws on a name the table lacks; the download button's script, bundled with it for a
server without static serving, loads and finds Streamlit's elements by it."""

from __future__ import annotations

from playwright.sync_api import Browser

from attention_lab.charts import script as chart_script
from attention_lab.frame import streamlit_dom
from attention_lab.frame.streamlit_dom import PARTS, part

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
            return { parts: m.PARTS, main: m.part("main"), thrown };""",
            ),
            streamlit_dom.TABLE.read_text(encoding="utf-8"),
        )
    finally:
        context.close()
    assert read["parts"] == dict(PARTS) and read["main"] == part("main")
    assert read["thrown"] == 'no Streamlit part named "mian"'


def test_the_bundled_download_script_loads_and_finds_the_page_by_the_table(browser: Browser) -> None:
    """Its module scope ran (the table's `part` built its lists of Streamlit's elements) and it
    exports the button's mount."""
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.set_content(f"<div {part('main').strip('[]').replace(chr(39), chr(34))}><h1>Heads</h1></div>")
        exported = page.evaluate(
            IMPORT.replace("return await import(url);", "return typeof (await import(url)).default;"),
            chart_script.bundled("save_view.js"),
        )
    finally:
        context.close()
    assert exported == "function" and errors == []
