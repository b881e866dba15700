"""Attention Lab: `streamlit run app/Home.py`. This file is the router around every page."""

from pathlib import Path

import streamlit as st

from attention_lab.accounts import admin
from attention_lab.accounts import sign_in as access
from attention_lab.charts import save_view
from attention_lab.frame import present, state, tables, turns
from attention_lab.lecture import classroom, tours
from attention_lab.models.resources import configure_torch, device_picker
from attention_lab.serving.logs import app_logging

app_logging()  # the lab's loggers at Streamlit's logger.level, once per process
configure_torch()
st.set_page_config(
    page_title="Attention Lab",
    page_icon=present.FAVICON,  # served inline: a :material: icon makes the browser fetch it from a font host
    layout="wide",
    initial_sidebar_state="collapsed" if present.requested() else "auto",
)
access.gate()  # where the box asks people to sign in, nothing else runs before they have

PAGES = Path(__file__).parent / "views"
SECTIONS = {
    "": [st.Page(PAGES / "home.py", title="Home", icon=":material/home:", default=True)],
    "Explore trained models": [
        st.Page(PAGES / "gpt.py", title="GPT explorer", icon=":material/edit_note:", url_path="gpt"),
        st.Page(
            PAGES / "reversal.py",
            title="Reversal explorer",
            icon=":material/swap_horiz:",
            url_path="reversal",
        ),
        st.Page(PAGES / "compare.py", title="Side by side", icon=":material/compare:", url_path="compare"),
        st.Page(PAGES / "bert.py", title="BERT versus GPT", icon=":material/sync_alt:", url_path="bert"),
    ],
    "Interpretability": [
        st.Page(
            PAGES / "heads.py", title="Heads you can read", icon=":material/psychology:", url_path="heads"
        ),
    ],
    "Lessons": [
        st.Page(
            PAGES / "basics.py", title="Attention basics", icon=":material/calculate:", url_path="basics"
        ),
        st.Page(
            PAGES / "positions.py",
            title="Positional encodings",
            icon=":material/place:",
            url_path="positions",
        ),
        st.Page(
            PAGES / "variance.py",
            title="Why divide by √d_k",
            icon=":material/functions:",
            url_path="variance",
        ),
        st.Page(PAGES / "cost.py", title="What attention costs", icon=":material/speed:", url_path="cost"),
    ],
    "Train": [
        st.Page(
            PAGES / "train.py", title="Train a model", icon=":material/model_training:", url_path="train"
        ),
    ],
}
#: reachable at /admin by address, not in the sidebar menu (accounts.admin decides who sees figures)
ADMIN = st.Page(PAGES / "admin.py", title="Admin", icon=":material/admin_panel_settings:", url_path="admin")
# the whole run in turns: a few at a time per process, as fast each as alone (frame.turns)
with turns.page_turn(classroom.run_turns()):
    navigation = st.navigation({**SECTIONS, "Admin": [ADMIN]}, position="hidden")
    BY_PATH = {p.url_path: p for pages in SECTIONS.values() for p in pages}
    classroom.open_new_view(BY_PATH)  # a follower whose lecturer moved goes there first
    state.page_links(SECTIONS)
    device_picker()
    access.account_panel()
    classroom.lecturer_panel()
    tours.recorder(navigation.url_path)
    present.apply()
    tables.style()  # once per run, for every table the page shows
    classroom.join_from_link()
    tours.follow_link(BY_PATH, navigation.url_path)
    state.enter_page(navigation.url_path)
    classroom.follower_banner(BY_PATH)
    tours.tour_bar()
    with st.sidebar:  # its fragment reruns alone when a tab asks for the file's shell
        save_view.save_view_button(tours.position(), classroom.following())
    state.carry(tours.link_params())  # a tour's scene travels with every URL the page writes
    state.after_write("class", classroom.share)  # the lecturer's view goes to the class once per run
    try:
        with admin.counted_run():  # the box's page runs and errors (/admin, /metrics)
            navigation.run()
    finally:  # once per run (a page that stops writes it itself: state.stop)
        state.write_url()
