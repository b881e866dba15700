"""Projector mode (`?present=1`, or the sidebar switch): the sidebar starts collapsed, text
and chart labels are larger, captions are hidden (the lecturer says them), the page starts
at the top of the screen, and every link the pages write keeps `present=1`.

Why: a lecturer projects the lab at 1280x720 to a room; the back rows must read the labels
and the maps should need as little scrolling as possible.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from attention_lab.frame.state import LINK_NOTICE_KEY
from attention_lab.frame.streamlit_dom import fill, keyed

KEY, PARAM = "present", "present"
#: the browser tab's icon (st.set_page_config's page_icon): Material Symbols' "visibility" (rounded,
#: app/static/icons, Apache-2.0) from a file, which Streamlit sends inline. Why not ":material/visibility:":
#: Streamlit's browser code fetches that one from fonts.gstatic.com, a request that leaves the box
#: (failing offline, and telling a third party who opened the class's pages).
FAVICON = str(Path(__file__).resolve().parents[1] / "static" / "icons" / "visibility.svg")
GRID_PX = 380  # height of an explorer's grid (and of its large head with the selectors) when projected
# /reversal's large head when projected: over 60% of a 720 px screen, so that the 13 rows and columns
# of a 12-letter input are each labelled in the larger type
HEAD_PX = 470

# What may open a page, above its title (a tour's scene bar, a follower's banner, the notice of a
# link's unusable values): their containers' keys.
TOP_BAR_KEYS = ("tour_bar", "class_banner", LINK_NOTICE_KEY)
# Every page, either mode, either theme: text at WCAG AA contrast (4.5:1) where Streamlit's own isn't,
# pills that wrap, and the bars above a page clear of the header. ($name: a Streamlit element,
# frame.streamlit_dom; LAYOUT_CSS and CSS below, which include this, fill them in at import.)
CONTRAST_CSS = (
    """
/* captions in the text colour, a little lighter: Streamlit's grey is 3.9:1 on white */
$caption { color: inherit; opacity: 0.8; }
/* a slider's value in the text colour: the dark theme's red on its background is 3.9:1 */
$slider_value { color: inherit; }
/* pills wrap onto more lines (Streamlit scrolls them sideways): a sample's 40 characters, none cut */
$pills div:has(> button[role="radio"]) { flex-wrap: wrap; overflow-x: visible; }
/* the page menu's link with keyboard focus: a ring (Streamlit gives it the current page's grey alone) */
$page_link:focus-visible { outline: 2px solid currentColor; outline-offset: -2px; }
/* a bar that opens the page starts below the header (3.75rem; 2.2rem projected), not under it */
"""
    + ", ".join(keyed(key) for key in TOP_BAR_KEYS)
    + " { margin-top: 1.25rem; }\n"
    + """
/* a collapsed sidebar lies off the screen: its controls leave the tab order (and screen readers)
   until it is opened, after its slide out (its help icons set their own visibility: all of it) */
$collapsed_sidebar, $collapsed_sidebar * {
  visibility: hidden !important; transition: visibility 0s 0.3s; }
"""
)
INPUT_ROW_KEYS = (
    "gpt_inputs",
    "rev_inputs",
)  # the keys of the explorers' first rows (views/gpt.py, reversal.py)
# Phones (a column of 390 px): the type and gaps a little tighter and a page's model and text side by
# side, so that the first screen shows the input and the first chart
PHONE_CSS = (
    """
@media (max-width: 640px) {
  $main_block $vertical_block { gap: 0.6rem; }
  h1 { font-size: 1.75rem !important; padding-bottom: 0.25rem !important; }
  h2 { font-size: 1.45rem !important; }  /* a section's heading stays below the page's title */
  h3 { font-size: 1.2rem !important; }
  $alert > div { padding: 0.6rem 0.8rem; }
  /* a page's first row: the model and the text side by side */
  :is("""
    + ", ".join(keyed(key) for key in INPUT_ROW_KEYS)
    + """) $columns > $column:not(:last-child) {
    min-width: calc(50% - 0.5rem) !important; }
}
"""
)
# Every page, outside projector mode: Streamlit leaves 6rem above the title (room for a header
# that holds only the menu here); 3rem lets the explorers' first map start above the fold at 1280x720.
LAYOUT_CSS = fill(
    """
<style>
$main_block { padding-top: 3rem; }
"""
    + CONTRAST_CSS
    + PHONE_CSS
    + "</style>\n"
)

CSS = fill(
    """
<style>
html { font-size: 19px !important; }
$header, $header $toolbar { background: transparent; height: 2.2rem; min-height: 2.2rem; }
/* the header's toolbar reaches below its 2.2rem: clicks and hovers there go to the page (the top
   row's help icons), only its own buttons keep theirs */
$header, $toolbar { pointer-events: none; }
$header button, $header a { pointer-events: auto; }
$main_block { padding-top: 1rem; padding-bottom: 2rem; max-width: 100%; }
$caption { display: none; }  /* the lecturer says it; the maps move up */
h1 { display: none; }  /* the lecturer names the page; the grid and its head fit on the screen */
h3 { padding-top: 0.2rem !important; padding-bottom: 0 !important; }
/* on a phone a row of switches wraps: its wide gap stays between them side by side, not when stacked */
@media (max-width: 640px) { $main_block $columns { row-gap: 0.6rem; } }
"""
    + CONTRAST_CSS
    + "</style>\n"
)


def on() -> bool:
    """Whether this run is projected (the sidebar switch, or the link's present=1)."""
    return bool(st.session_state.get(KEY, False))


def requested() -> bool:
    """Projector mode for this run: a session opened by a link starts as its URL says
    (present=1); from then on the sidebar switch decides (the URL only follows it)."""
    if KEY not in st.session_state and PARAM in st.query_params:
        st.session_state[KEY] = st.query_params[PARAM].lower() in ("1", "true", "yes", "on")
    return bool(st.session_state.get(KEY, False))


def apply() -> None:
    """The sidebar switch, and the larger type when on; call after st.set_page_config."""
    st.session_state[KEY] = st.session_state.get(KEY, False)  # kept while other pages are shown
    with st.sidebar:
        st.toggle(
            "Projector mode",
            key=KEY,
            help="Larger text and labels, less chrome, the sidebar collapsed; links keep present=1.",
        )
    st.html(CSS if st.session_state[KEY] else LAYOUT_CSS)
