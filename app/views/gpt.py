import streamlit as st

st.title("gpt")
st.info("This page is being built.")
