import streamlit as st

st.title("variance")
st.info("This page is being built.")
