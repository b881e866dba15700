import streamlit as st

st.title("basics")
st.info("This page is being built.")
