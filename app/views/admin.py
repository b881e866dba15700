"""/admin: the box as its admins see it. The run queue with every waiting and training run
and the latest finished ones, the runs folder against its disk budget, GPU memory per process,
and page runs and errors across every app process; the same figures as Prometheus metrics
(`python -m attention_lab.serving.metrics`, started by `attention-lab serve --metrics-port N`)."""

import streamlit as st

from attention_lab.accounts import admin

st.title("The admin's view", anchor=False)
if admin.admitted():
    figures = admin.figures()
    admin.show_queue(figures)
    admin.show_disk(figures)
    admin.show_gpu(figures)
    admin.show_pages(figures)
