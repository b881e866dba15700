"""The view layer: what each page draws, computed without Streamlit from (checkpoint, request).

A page builds a frozen request from its widgets, gets the view through
`attention_lab.models.compute.view_cached` (one shared, read-only object per weights and
request, for every user) and only draws it."""
