import streamlit as st

st.title("reversal")
st.info("This page is being built.")
