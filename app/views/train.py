"""Train a model and watch its attention heads form.

The run trains in its own run process (serving.run_process); this page
submits it to the box-wide queue, then only reads its progress files. Every run is saved
under its run id, which is the link to it: `/train?run=<id>` reopens this view from any
browser, `/reversal?checkpoint=<id>` (or `/gpt?...`) explores the model.
"""

import datetime
import time

import pandas as pd
import streamlit as st

from attention_lab.charts import component
from attention_lab.frame import tables
from attention_lab.frame.markdown_safe import md_code
from attention_lab.frame.state import shown, visible, write_state
from attention_lab.models.resources import current_device
from attention_lab.serving import LIMITS, RunError, RunInfo, RunProgress, RunRequest, page_config
from attention_lab.training.block_form import block_choices, run_tags
from attention_lab.training.run_view import (
    HEAD_SCORES,
    RunCharts,
    head_score_curves,
    head_scores_csv,
    overlay_charts,
    run_charts,
)
from attention_lab.training.runs import (
    CURRENT_PREFIX,
    REPORT_LENGTHS,
    checkpoint_zip,
    current_run_id,
    evicted_runs,
    length_column,
    length_table,
    my_run_label,
    my_runs,
    open_run,
    progress,
    read_progress,
    run_queue,
    span_caption,
    submit,
    trained_span,
)
from attention_lab.training.scrubber import show_snapshots
from transformer_core import POSITION_SCHEMES, ConfigError, InputError, perplexity
from transformer_core.io import corpus_from_bytes
from transformer_core.train import DEFAULT_SIZE, TASKS, TRAIN_LENGTHS, default_positions

MAX_UPLOAD_BYTES = 5_000_000
EXPLORERS = {"seq2seq": ("reversal", "Reversal explorer"), "gpt": ("gpt", "GPT explorer"),
             "bert": ("bert", "BERT versus GPT page")}  # by arch  # fmt: skip
SCHEDULES = ["cosine", "vaswani", "constant"]
# (idle seconds below, poll every): a refresh re-sends the whole panel (charts, the snapshot's
# heatmap), so even while progress arrives it comes every 2 s, not every second
# (idle seconds below, poll every): every 2 s through a dead worker's ALIVE_SECONDS, so its run
# reads "failed" within 10 s; slower while a long evaluation keeps a live run quiet
POLL_TIERS = ((12.0, 2.0), (30.0, 4.0), (float("inf"), 8.0))
SCHEMES = list(POSITION_SCHEMES)
MODEL_KINDS = {
    "transformer": "Transformer",
    "gru": "GRU seq2seq, no attention",
    "bahdanau": "GRU + Bahdanau attention",
}

st.title("Train a model", anchor=False)
st.caption(
    "Pick a task and a positional scheme, press Start, and watch the loss fall while the "
    "attention of a fixed probe input changes. The run trains on the server even when you "
    "close this tab; it is saved under a private link that works from any browser."
)


# ---------------------------------------------------------------- 1. the run's settings
def apply_size() -> None:
    """Set the shape widgets to the chosen size preset of the chosen task."""
    size = TASKS[st.session_state["train_task"]].sizes[st.session_state["train_preset"]]
    st.session_state.update(
        train_d_model=size["d_model"], train_n_layers=size["n_layers"], train_n_heads=size["n_heads"]
    )


def apply_task() -> None:
    """A new task: its watched size and shape, steps, batch size, learning rate (and scheme,
    if it has one)."""
    recipe = TASKS[st.session_state["train_task"]]
    st.session_state["train_preset"] = recipe.watched_size
    apply_size()
    if recipe.positions:
        st.session_state["train_positions"] = recipe.positions
    defaults = recipe.page_optim
    st.session_state.update(train_steps=defaults.steps, train_batch=defaults.batch_size, train_lr=defaults.lr)


first_visit = {"train_task": "reverse", "train_positions": "rope", "train_schedule": SCHEDULES[0],
               "train_preset": TASKS["reverse"].watched_size, "train_warmup": True}  # fmt: skip
for key, default in first_visit.items():
    st.session_state.setdefault(key, default)
applied = st.session_state.get("train_applied")  # (task, size) the shape and optimiser widgets show
if applied != (st.session_state["train_task"], st.session_state["train_preset"]):
    if applied is None or applied[0] != st.session_state["train_task"]:
        apply_task()
    else:
        apply_size()
    st.session_state["train_applied"] = (st.session_state["train_task"], st.session_state["train_preset"])

with st.container(border=True):
    c1, c2, c3 = st.columns(3)
    task = c1.radio(
        "Task", list(TASKS), format_func=lambda t: TASKS[t].title, key="train_task", persist_state="session"
    )
    kinds = TASKS[task].model_kinds  # the reversal task also trains chapter 004's recurrent baselines
    kind = c2.radio("Model", kinds, format_func=MODEL_KINDS.__getitem__, key="train_model",
                    persist_state="session", horizontal=True) if len(kinds) > 1 else kinds[0]  # fmt: skip
    recurrent = kind != "transformer"
    no_scheme = "A recurrent model reads the letters in order: it has no positional scheme."
    positions = (
        c2.selectbox("Positional scheme", ["none"], key="train_no_positions", disabled=True, help=no_scheme)
        if recurrent  # shown as it is; the Transformer's own choice stays for when it comes back
        else c2.selectbox("Positional scheme", SCHEMES, key="train_positions", persist_state="session")
    )
    preset = c3.select_slider(
        "Model size", list(TASKS[task].sizes), key="train_preset", persist_state="session"
    )
    with st.expander("Model shape and optimiser (the device is chosen in the sidebar)"):
        a1, a2, a3 = st.columns(3)
        d_model = a1.number_input(
            "d_model", *LIMITS.d_model, step=16, key="train_d_model", persist_state="session"
        )
        n_layers = a2.number_input("layers", *LIMITS.n_layers, key="train_n_layers", persist_state="session",
                                   disabled=recurrent)  # fmt: skip
        n_heads = a3.number_input("heads", *LIMITS.n_heads, key="train_n_heads", persist_state="session",
                                  disabled=recurrent)  # fmt: skip
        no_ffn = not TASKS[task].shape.get("mlp", True)  # an attention-only model has no activation to pick
        block = block_choices(recurrent, no_ffn)
        b1, b2, b3, b4 = st.columns(4)
        steps = b1.number_input(
            "Steps", 10, LIMITS.steps[1], step=100, key="train_steps", persist_state="session"
        )
        batch_size = b2.number_input(
            "Batch size", *LIMITS.batch_size, key="train_batch", persist_state="session"
        )
        lr = b3.number_input(
            "Peak learning rate", 1e-5, 1e-1, format="%.4f", key="train_lr", persist_state="session"
        )
        schedule = b4.selectbox(
            "Schedule", SCHEDULES, key="train_schedule", persist_state="session",
            help="cosine: warm-up (if on), then a cosine decay; vaswani: warm-up, then 1/sqrt(step); "
            "constant: the peak rate throughout (after the warm-up, if on)",
        )  # fmt: skip
    if block.norm_position == "post" and not block.warmup and not recurrent:
        st.caption(
            "Post-LN without warm-up: a deep model often fails to train this way (see the performance "
            "page, Block variants). Start it beside a Pre-LN run and overlay the two under My runs."
        )
    corpus, corpus_error = None, False
    if task in ("lm", "mlm"):
        upload = st.file_uploader(
            "Corpus (optional): a UTF-8 .txt file up to 5 MB, e.g. TinyShakespeare",
            type=["txt"],
            key="train_corpus",
        )
        if upload is not None:
            try:
                corpus = corpus_from_bytes(upload.getvalue(), name=upload.name, max_bytes=MAX_UPLOAD_BYTES)
                st.caption(
                    f"Using {md_code(visible(upload.name))}: {len(corpus):,} characters, "
                    f"{len(set(corpus))} distinct."
                )
            except InputError as e:
                st.error(f"{visible(str(e))}. Remove the file to train on the default corpus.")
                corpus_error = True
        else:
            st.caption("Using the default corpus: the documentation topics bundled with Python.")


def start(
    task: str, scheme: str, size: str, shape: dict[str, int | str], corpus: str | None = None, **optim
) -> None:
    """Submit a run (the form's, or a length-table row's) and show it; shape["model"]: a recurrent
    kind instead of the Transformer."""
    stamp = datetime.datetime.now().strftime("%H:%M:%S")
    name, what = TASKS[task].short, str(shape.get("model", scheme))
    what += run_tags(shape, optim.get("warmup", True))
    try:
        config = page_config(task, device=str(current_device()), **optim)
        request = RunRequest(config.to_dict(), scheme, size, shape, label=f"my-{name}-{what} {stamp}")
        run_id = submit(request, corpus)
    except (ConfigError, InputError, RunError) as e:
        st.error(str(e))
        return
    st.query_params["run"] = run_id
    for key in ("train_poll", "train_last_progress"):
        st.session_state.pop(key, None)
    st.rerun()


# ---------------------------------------------------------------- 2. this run: link, start, stop
link_id = st.query_params.get("run")
if link_id and link_id != current_run_id():
    info = open_run(link_id)
    if info is None:
        st.error(
            f"Unknown or expired run {md_code(shown(link_id))}: no run with this id is stored on this "
            "server. Check the link, or start a new run below.",
            icon=":material/link_off:",
        )
for gone in evicted_runs():
    st.warning(f"Your run **{gone.label}** ({gone.id}) was {gone.error}.", icon=":material/delete:")

queue = run_queue()
run_id = current_run_id()
# the URL names the run shown, also after a visit to another page: a copied URL reopens it;
# a link's unknown run id (named above) and anything else it had are dropped
write_state(["run"], prefix=CURRENT_PREFIX)
info = queue.info(run_id) if run_id else None
active = info is not None and info.active
start_col, stop_col, info_col = st.columns([1, 1, 4])
if start_col.button("Start", type="primary", icon=":material/play_arrow:", disabled=active or corpus_error):
    shape: dict[str, int | str] = dict(
        d_model=int(d_model), n_layers=int(n_layers), n_heads=int(n_heads), **block.shape()
    )
    if recurrent:  # the size preset's recurrent shape (one GRU layer); the scheme is none
        shape, positions = {"model": kind}, default_positions(kind)
    start(task, positions, preset, shape, corpus, steps=int(steps), batch_size=int(batch_size), lr=float(lr),
          schedule=schedule, warmup=block.warmup)  # fmt: skip
if stop_col.button("Stop", icon=":material/stop:", disabled=not active):
    queue.stop(run_id)
    deadline = time.monotonic() + 2.0  # the worker stops after its current step and saves
    while queue.info(run_id).active and time.monotonic() < deadline:
        time.sleep(0.05)
    st.rerun()
running, waiting = queue.counts()
info_col.caption(
    f"Device: **{current_device()}** · this server: {running} of {queue.max_running} training slots busy, "
    f"{waiting} waiting"
)
if mine := my_runs():
    with st.expander(f"My runs ({len(mine)})", icon=":material/folder_open:"):
        for mine_info in mine:
            st.page_link("views/train.py", label=my_run_label(mine_info), query_params={"run": mine_info.id})
        labels = {i.id: i.label for i in mine}
        chosen = st.multiselect(
            "Overlay runs", list(labels), format_func=labels.get, key="train_overlay",
            help="Two or more of your runs on one chart: their losses and each block's gradient norm.",
        )  # fmt: skip
        if len(chosen) >= 2:
            loss_fig, grads_fig = overlay_charts({labels[r]: read_progress(r) for r in chosen})
            component.show(loss_fig, key="train_overlay_loss")
            component.show(grads_fig, key="train_overlay_grads")
            st.caption(
                "Gradient norms are each block's (encoder.0, decoder.1, …) before clipping at 1.0: "
                "Post-LN without warm-up shows its large early gradients here."
            )


# ---------------------------------------------------------------- 3. live progress
def progress_text(info: RunInfo, p: RunProgress) -> str:
    total = p.total or 1
    rate = p.step / p.elapsed if p.elapsed else 0.0
    eta = (total - p.step) / rate if rate else None
    timing = (
        f" · ETA {eta:,.0f} s" if info.status == "running" and eta is not None else f" · {p.elapsed:,.1f} s"
    )
    # a run pauses between steps while the box's CPUs are full (serving comes first)
    paused = f" · paused {p.paused:,.0f} s while the server was busy" if p.paused >= 1 else ""
    loss = f" · loss {p.losses[-1]:.3f} nats (perplexity {perplexity(p.losses[-1]):,.2f})" if p.losses else ""
    return (
        f"**{info.label}** · {info.status} · step {p.step:,} / {total:,}{loss}"
        f" · {p.tokens_per_s:,.0f} tokens/s" + timing + paused
    )


def show_progress(info: RunInfo, p: RunProgress) -> None:
    if info.status == "queued":
        st.info(f"Waiting for a free training slot: you are number {info.position or 1} in the queue.")
        return
    if info.status == "starting" and not p.steps:
        st.info("Starting the training process…")
        return
    st.progress(min(1.0, p.step / (p.total or 1)), text=progress_text(info, p))
    if info.status == "failed":
        st.error(f"The run stopped: {info.error}")
    elif info.error:
        st.info(f"The run was {info.error}.")
    if not p.steps:
        return
    view = run_charts(info.task, p)
    left, right = st.columns(2)
    left.markdown("**Training loss**")
    component.show(view.loss, key="train_loss_fig", where=left)
    right.markdown("**Learning rate**")
    component.show(view.lr, key="train_lr_fig", where=right)
    if info.task == "induction":
        show_induction(view)
    elif view.evaluation is not None:
        st.markdown(f"**Evaluation** ({view.eval_title})")
        component.show(view.evaluation, key="train_eval_fig")
    show_snapshots(info, p)


def show_induction(view: RunCharts) -> None:
    """The in-context loss (first copy vs repeat) beside every head's previous-token and
    induction score over training: the induction bump of Olsson et al. (2022)."""
    if view.in_context is None or view.head_scores is None:
        st.caption("The loss on each copy and every head's scores appear at the first evaluation.")
        return
    left, *score_cols = st.columns(3)
    left.markdown("**Loss on the first copy vs the repeat** (nats)")
    component.show(view.in_context, key="train_ic_fig", where=left)
    for col, (score, title) in zip(score_cols, HEAD_SCORES.items(), strict=True):
        col.markdown(f"**{title} of every head**")
        component.show(view.head_scores[score], key=f"train_{score}_fig", where=col)
    st.caption(
        "The repeat becomes predictable only when a layer-0 head attends to the previous token and "
        "a layer-1 head uses it to find the earlier copy: watch the repeat loss drop as those two "
        "scores rise together."
    )


def poll_interval(idle: float) -> float:
    """Seconds between live-panel polls after `idle` seconds without new progress."""
    return next(every for below, every in POLL_TIERS if idle < below)


def live_panel(run_id: str) -> None:
    """Redrawn by itself while the run is active: every 2 s while progress arrives (and 12 s
    more, so a run whose worker died reads failed within 10 s),
    backing off to every 4 s, then 8 s, while nothing changes (a queued run, a long
    evaluation). Only new progress lines are read; the charts hold at most 400 points."""
    info = queue.info(run_id)
    p = progress(run_id)
    now = time.monotonic()
    if p.refresh() or "train_last_progress" not in st.session_state:
        st.session_state["train_last_progress"] = now
    if info.status == "queued":
        queue.dispatch()  # a slot may have been freed by a worker that died
    if not info.active:
        st.rerun(scope="app")  # the finished run, its results and its own scrubber
    show_progress(info, p)
    wanted = poll_interval(now - st.session_state["train_last_progress"])
    if wanted != st.session_state.get("train_poll", POLL_TIERS[0][1]):
        st.session_state["train_poll"] = wanted
        st.rerun(scope="app")  # a fragment's interval is fixed when the page draws it


def show_induction_results(p: RunProgress) -> None:
    """Final in-context losses, the strongest head of each kind, and the scores as CSV."""
    m = p.metrics
    cols = st.columns(4)
    losses = (("loss_first_copy", "first copy"), ("loss_repeat", "repeat"))
    for col, (key, what) in zip(cols[:2], losses, strict=True):
        col.metric(f"Loss on the {what} (nats · perplexity)", f"{m[key]:.3f} · {perplexity(m[key]):,.2f}")
    for col, (score, title) in zip(cols[2:], HEAD_SCORES.items(), strict=True):
        last = head_score_curves(p, score).iloc[-1]
        col.metric(f"Top {title.lower()}", f"{last.max():.2f} · {last.idxmax()}")
    st.download_button(
        "Download every head's scores (CSV)",
        head_scores_csv(p),
        file_name="head_scores.csv",
        mime="text/csv",
        icon=":material/download:",
        on_click="ignore",
    )


def show_results(info: RunInfo, p: RunProgress) -> None:
    st.subheader("Results")
    if info.status == "failed":
        return
    if info.status == "stopped" and not p.metrics:
        st.info("The run was stopped before its final evaluation; the model is saved all the same.")
    if info.task == "reverse" and p.metrics:
        em, tok = p.metrics["exact_match"], p.metrics["token_accuracy"]
        table = pd.DataFrame(
            {
                "length": [int(n) for n in em],
                "greedy exact match": list(em.values()),
                "token accuracy (teacher-forced)": list(tok.values()),
            }
        )
        table["in training range"] = table["length"].between(*TRAIN_LENGTHS)
        tables.show(table, key="train_results", index=False, digits=3)
    elif info.task == "induction" and p.metrics:
        show_induction_results(p)
    elif p.metrics:
        loss_col, ppl_col, fill_col = st.columns([1, 1, 2])
        per = "hidden character" if "masked_accuracy" in p.metrics else "character"
        loss_col.metric(f"Validation loss (nats per {per})", f"{p.metrics['val_loss']:.3f}")
        ppl_col.metric(
            "Validation perplexity",
            f"{perplexity(p.metrics['val_loss']):,.2f}",
            help="e^loss: as unsure as a choice among this many equally likely characters.",
        )
        if "masked_accuracy" in p.metrics:  # a masked LM: its loss is per hidden character
            chance = f"Held-out text; always the commonest character: {p.metrics['chance_accuracy']:.1%}"
            fill_col.metric(
                "Hidden characters guessed right", f"{p.metrics['masked_accuracy']:.1%}", help=chance
            )
    if p.sample:
        st.markdown("**Blanks filled**" if info.task == "mlm" else "**Sample** (temperature 0.8)")
        st.code(p.sample, language=None, wrap_lines=True)
    if not queue.has_checkpoint(info.id):
        return
    page, title = EXPLORERS[TASKS[info.task].arch]
    st.success(
        f"**{info.label}** is saved and is now a choice in the {title}. Its private links "
        "(anyone with a link can open the model, from any browser, until old runs are cleared):"
    )
    links = f"/{page}?checkpoint={info.id}\n/train?run={info.id}"
    if info.task == "induction":
        links = f"/heads?checkpoint={info.id}\n" + links
    st.code(links, language=None)
    opens = {"checkpoint": info.id}
    st.page_link(
        f"views/{page}.py", label=f"Open it in the {title}", icon=":material/open_in_new:", query_params=opens
    )
    if info.task == "induction":
        st.page_link(
            "views/heads.py", label="Read its heads on the Heads page", icon=":material/open_in_new:",
            query_params=opens,
        )  # fmt: skip
    st.download_button(
        "Download checkpoint (.zip: safetensors + JSON)",
        lambda: checkpoint_zip(info.id),
        file_name=f"{info.id}.zip",
        mime="application/zip",
        icon=":material/download:",
        on_click="ignore",
    )


if info is not None and info.status != "evicted":
    if info.active:
        st.fragment(run_every=st.session_state.get("train_poll", POLL_TIERS[0][1]))(live_panel)(run_id)
    else:
        p = progress(info.id)
        p.refresh()
        show_progress(info, p)
        show_results(info, p)

# ---------------------------------------------------------------- 4. length generalisation
st.divider()
st.subheader("Length generalisation: which positional scheme reverses longer strings?")
results = length_table()
span = trained_span(results)
st.caption(f"{span_caption(results, span)} Our rows are measured on 200 random strings per length.")
REPORTED = " (chapter 004 reports)"  # printed in the chapter, never measured here
CHAPTER_ROWS = {  # teacher-forced per-token accuracy as the chapter prints it
    "vanilla seq2seq" + REPORTED: {"3": 0.92, "5": 0.55, "7": 0.28, "10": 0.10, "15": 0.05},
    "+ Bahdanau attention" + REPORTED: {"3": 0.99, "5": 0.97, "7": 0.94, "10": 0.90, "15": 0.55},
    "Transformer" + REPORTED: {"3": 1.0, "5": 1.0, "7": 1.0, "10": 1.0, "15": 0.08},
}
metric = st.radio(
    "Metric",
    ["greedy exact match", "token accuracy (teacher-forced)"],
    horizontal=True,
    key="length_metric",
    persist_state="session",
)
key = "exact_match" if metric.startswith("greedy") else "token_accuracy"
st.caption(
    "The first three rows are what chapter 004 prints (token accuracy), not measured here; every other "
    "row is measured: the Transformer per positional scheme, and the two recurrent baselines."
    if key == "token_accuracy"
    else "Chapter 004 reports token accuracy: choose it to see its three printed rows beside ours."
)
rows = []
if key == "token_accuracy":
    for name, values in CHAPTER_ROWS.items():
        rows.append({"model": name, **{length_column(n, span): values.get(str(n)) for n in REPORT_LENGTHS}})
for name, entry in results.get("rows", {}).items():
    shown = MODEL_KINDS[name] if name in MODEL_KINDS else f"Transformer, {name}"
    rows.append({"model": shown, **{length_column(n, span): entry[key].get(str(n)) for n in REPORT_LENGTHS}})
if rows:
    table = pd.DataFrame(rows).set_index("model")
    tables.show(table, key="length_table", digits=2,
                bars=dict.fromkeys(table.columns, (0.0, 1.0)))  # fmt: skip
    if results.get("command"):
        st.caption(f"Made by `{results['command']}`")
else:
    st.info("No precomputed results shipped (checkpoints/length_generalization.json is missing).")
rerun_cols = st.columns([2, 1])
row_scheme = rerun_cols[0].selectbox(
    "Re-run one row yourself", SCHEMES, key="length_rerun_scheme", persist_state="session"
)
if rerun_cols[1].button("Train this row", disabled=active, key="length_rerun"):
    start("reverse", row_scheme, DEFAULT_SIZE, {})  # the shipped models' size, the page's schedule
