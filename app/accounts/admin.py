"""/admin's plumbing: who may see it, the box's page counter (the router counts every
page run and every page that raises), and the sections of figures (`serving.admin`).

Who: a signed-in person (st.login) whose e-mail is in ATTENTION_LAB_ADMINS, or, on a box
without sign-in, whoever types ATTENTION_LAB_ADMIN_TOKEN into the page (compared in constant
time, never in the URL; the session keeps only a digest of the token it was given, so a new
token locks every session out). With neither set the page says how to turn it on.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import hmac
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import streamlit as st

from attention_lab.accounts.sign_in import person_label, signed_in_email
from attention_lab.frame import tables
from attention_lab.models.resources import run_queue
from attention_lab.serving import settings
from attention_lab.serving.admin import Figures, collect
from attention_lab.serving.page_stats import RATE_MINUTES, PageCounter
from transformer_core.errors import ConfigError

ADMITTED = "_admin_token_digest"  # session_state: digest of the admin token this session gave
MISSING = "—"


@st.cache_resource(max_entries=2)
def _counter(root: str) -> PageCounter:
    return PageCounter(Path(root))


def page_counter() -> PageCounter:
    """This process's handle on the box's page counts (one per runs folder)."""
    return _counter(str(settings.runs_dir()))


@contextlib.contextmanager
def counted_run() -> Iterator[None]:
    """Around a page's run (the router): one page run, and one error when the page raises
    (the exception goes on to Streamlit, which shows it); st.stop and st.rerun are runs."""
    error = False
    try:
        yield
    except Exception:
        error = True
        raise
    finally:
        page_counter().record(error=error)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def admitted() -> bool:
    """Whether this session may see the figures; draws the way in (or why not) when not."""
    try:
        emails, token = settings.admin_emails(), settings.admin_token()
    except ConfigError as e:
        st.error(str(e), icon=":material/error:")
        return False
    if not emails and token is None:
        st.info(
            "The admin's view is off on this box. To turn it on, start the app processes with "
            "`ATTENTION_LAB_ADMIN_TOKEN` set to a secret of 16 characters or more (then type it here), "
            "or, where people sign in, with `ATTENTION_LAB_ADMINS` set to the admins' e-mail addresses, "
            "comma-separated. See the docs: Host it, “The admin's view and Prometheus”.",
            icon=":material/admin_panel_settings:",
        )
        return False
    if signed_in_email() in emails:
        return True
    if token is None:
        st.warning(
            "This page is for the box's admins: sign in with an admin's account.", icon=":material/lock:"
        )
        return False
    if hmac.compare_digest(st.session_state.get(ADMITTED, ""), _digest(token)):
        return True
    return _token_form(token)


def _token_form(token: str) -> bool:
    with st.form("admin_token_form", clear_on_submit=True, enter_to_submit=True):
        given = st.text_input("Admin token", type="password", help="ATTENTION_LAB_ADMIN_TOKEN of this box")
        sent = st.form_submit_button("Open the admin's view", icon=":material/lock_open:")
    if not sent:
        return False
    if hmac.compare_digest(given.strip().encode(), token.encode()):
        st.session_state[ADMITTED] = _digest(token)
        st.rerun()
    st.error("That is not this box's admin token.", icon=":material/block:")
    return False


def figures() -> Figures:
    """The box's figures now (read afresh on every run: there is nothing to cache)."""
    return collect(run_queue(), page_counter())


def _when(stamp: float | None) -> str:
    return datetime.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S") if stamp else MISSING


def _mib(value: int | None) -> str:
    return MISSING if value is None else f"{value / 2**20:,.1f} MiB"


def run_table(f: Figures) -> pd.DataFrame:
    """The runs an admin sees, one row each."""
    return pd.DataFrame(
        [
            {
                "run": r.info.id[:12] + "…",
                "label": r.info.label or MISSING,
                "owner": person_label(r.info.owner),
                "status": r.info.status + (f" (#{r.info.position})" if r.info.position else ""),
                "started": _when(r.info.started),
                "steps": f"{r.progress.step:,} / {r.progress.total:,}" if r.progress.total else MISSING,
                "device": r.progress.device or MISSING,
                "GPU memory": _mib(r.progress.gpu_bytes) if f.gpu else "no GPU",
            }
            for r in f.runs
        ],
        columns=["run", "label", "owner", "status", "started", "steps", "device", "GPU memory"],
    )


def show_queue(f: Figures) -> None:
    st.header("Run queue")
    c = f.counts
    cols = st.columns(4)
    cols[0].metric("Waiting", c["queued"])
    cols[1].metric("Training", c["starting"] + c["running"], help=f"at most {f.max_running} at once")
    cols[2].metric("Finished", c["done"] + c["stopped"])
    cols[3].metric("Failed", c["failed"])
    if f.runs:
        tables.show(run_table(f), key="admin_runs", index=False, height=420)
    else:
        st.caption("No runs yet.")
    st.caption(
        "Owner: the signed-in account that started the run; without sign-in, “a browser”. "
        "Runs started before owners were recorded show —."
    )


def show_disk(f: Figures) -> None:
    st.header("Disk")
    share = f.disk_bytes / f.disk_budget_bytes
    st.metric("Runs folder", f"{_mib(f.disk_bytes)} of {_mib(f.disk_budget_bytes)}")
    st.progress(min(1.0, share), text=f"{share:.0%} of the budget (ATTENTION_LAB_RUNS_MAX_MB)")


def show_gpu(f: Figures) -> None:
    st.header("GPU memory per process")
    if not f.gpu:
        st.caption("No GPU on this box: runs and pages use the CPU.")
        return
    rows = [
        {"process": f"run {r.info.id[:12]}…", "pid": r.info.pid, "GPU memory": _mib(r.progress.gpu_bytes)}
        for r in f.runs
        if r.info.active
    ]
    rows += [{"process": "app", "pid": p.pid, "GPU memory": _mib(p.gpu_bytes)} for p in f.pages.processes]
    tables.show(pd.DataFrame(rows, columns=["process", "pid", "GPU memory"]), key="admin_gpu", index=False)


def show_pages(f: Figures) -> None:
    st.header("Pages")
    p = f.pages
    cols = st.columns(4)
    cols[0].metric(
        "Page runs / min", f"{p.runs_per_minute:.1f}", help=f"over the last {RATE_MINUTES} minutes"
    )
    cols[1].metric("Errors / min", f"{p.errors_per_minute:.1f}", help=f"over the last {RATE_MINUTES} minutes")
    cols[2].metric("Page runs", f"{p.runs_total:,}", help="since the runs folder was made")
    cols[3].metric("Errors", f"{p.errors_total:,}", help="page runs that raised an exception")
    st.caption(f"{len(p.processes)} app process(es) ran a page in the last 10 minutes.")
