"""Attention Lab: the app around `transformer_core`.

`streamlit run app/Home.py` (or the `attention-lab` command) starts it. The package is laid
out by role; arrows run one way, checked by tests/structure:

    frame      the page frame: URL state, projector mode, safe text, table style
    lecture    the classroom: class sessions, their push and mirrors, tours
    accounts   sign-in and the admin's figures
    models     loading checkpoints once per device and the cached compute on them
    charts     chart specs, the canvas component, descriptions in words, exports
    explorers  the /gpt, /reversal, /compare and /heads panels
    lesson_pages  the lessons' charts and page helpers; `lessons` holds their maths
    training   /train's runs and snapshot scrubber
    serving    run stores, run processes, workers and settings (no Streamlit)
    viewmodel  what each page draws, computed without Streamlit, shared by every user
    deploy     the `attention-lab` command's serve and check, and one app process
    views      the pages themselves (scripts run by Streamlit's router in Home.py)
"""

__version__ = "0.2.0"
APP_PROCESS = "attention_lab.deploy.app_process"  # `python -m` it: `streamlit run`, announcing its backend
