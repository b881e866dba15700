import streamlit as st

st.title("positions")
st.info("This page is being built.")
