"""Projector mode (`?present=1`, or the sidebar switch): the sidebar starts collapsed, text
and chart labels are larger, captions are hidden (the lecturer says them), the page starts
at the top of the screen, and every link the pages write keeps `present=1`.

Why: a lecturer projects the lab at 1280x720 to a room; the back rows must read the labels
and the maps should need as little scrolling as possible.
"""

from __future__ import annotations

import streamlit as st

KEY, PARAM = "present", "present"
GRID_PX = 380  # height of an explorer's grid (and of its large head with the selectors) when projected
# /reversal's large head when projected: over 60% of a 720 px screen, so that the 13 rows and columns
# of a 12-letter input are each labelled in the larger type
HEAD_PX = 470

# The bars that may open a page (a tour's scene bar, a follower's banner): their containers' keys.
TOP_BAR_KEYS = ("tour_bar", "class_banner")
# Every page, either mode, either theme: text at WCAG AA contrast (4.5:1) where Streamlit's own isn't,
# pills that wrap, and the bars above a page clear of the header.
CONTRAST_CSS = (
    """
/* captions in the text colour, a little lighter: Streamlit's grey is 3.9:1 on white */
[data-testid="stCaptionContainer"] { color: inherit; opacity: 0.8; }
/* a slider's value in the text colour: the dark theme's red on its background is 3.9:1 */
[data-testid="stSliderThumbValue"] { color: inherit; }
/* pills wrap onto more lines (Streamlit scrolls them sideways): a sample's 40 characters, none cut */
[data-testid="stButtonGroup"] div:has(> button[role="radio"]) { flex-wrap: wrap; overflow-x: visible; }
/* a bar that opens the page starts below the header (3.75rem; 2.2rem projected), not under it */
"""
    + ", ".join(f".st-key-{key}" for key in TOP_BAR_KEYS)
    + " { margin-top: 1.25rem; }\n"
)
# Every page, outside projector mode: Streamlit leaves 6rem above the title (room for a header
# that holds only the menu here); 3rem lets the explorers' first map start above the fold at 1280x720.
LAYOUT_CSS = (
    """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 3rem; }
"""
    + CONTRAST_CSS
    + "</style>\n"
)

CSS = (
    """
<style>
html { font-size: 19px !important; }
header[data-testid="stHeader"] { background: transparent; height: 2.2rem; }
[data-testid="stMainBlockContainer"] { padding-top: 1rem; padding-bottom: 2rem; max-width: 100%; }
[data-testid="stCaptionContainer"] { display: none; }  /* the lecturer says it; the maps move up */
h1 { display: none; }  /* the lecturer names the page; the grid and its head fit on the screen */
h3 { padding-top: 0.2rem !important; padding-bottom: 0 !important; }
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
