"""Train a model in the browser and watch its attention heads form."""

import datetime

import pandas as pd
import streamlit as st
from lab.plots import PNG_CONFIG, head_heatmap
from lab.resources import current_device
from lab.runs import (
    REPORT_LENGTHS,
    checkpoint_zip,
    current_run,
    length_table,
    publish,
    remember,
    remembered,
    reversal_eval_lengths,
    run_slots,
    start_run,
)

from transformer_core.config import POSITION_SCHEMES
from transformer_core.errors import ConfigError, InputError
from transformer_core.io.data import corpus_from_bytes
from transformer_core.train.runs import BackgroundRun
from transformer_core.train.trainer import TrainConfig, prepare_run

MAX_UPLOAD_BYTES = 5_000_000
PRESETS = {  # task -> preset -> model overrides
    "reverse": {
        "tiny": dict(d_model=32, n_layers=1, n_heads=2, d_ff=128),
        "small": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
        "medium": dict(d_model=128, n_layers=3, n_heads=4, d_ff=512),
    },
    "lm": {
        "tiny": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
        "small": dict(d_model=128, n_layers=4, n_heads=4, d_ff=512),
        "medium": dict(d_model=192, n_layers=6, n_heads=6, d_ff=768),
    },
}
DEFAULT_STEPS, DEFAULT_BATCH, DEFAULT_LR = (
    {"reverse": 3000, "lm": 1000},
    {"reverse": 64, "lm": 32},
    {"reverse": 2e-3, "lm": 3e-3},
)
TASK_LABELS = {"reverse": "String reversal (encoder-decoder)", "lm": "Character language model (GPT)"}

st.title("Train a model")
st.caption(
    "Pick a task and a positional scheme, press Start, and watch the loss fall while the "
    "attention of a fixed probe input changes. The run keeps going while you visit other "
    "pages; when it ends, your model appears as a choice in the explorers."
)

# ---------------------------------------------------------------- 1. the run's settings
with st.container(border=True):
    c1, c2, c3 = st.columns(3)
    st.session_state.setdefault("train_task", "reverse")
    st.session_state.setdefault("train_positions", "rope")
    task = c1.radio("Task", list(TASK_LABELS), format_func=TASK_LABELS.get, key="train_task")
    positions = c2.selectbox("Positional scheme", POSITION_SCHEMES, key="train_positions")
    st.session_state.setdefault("train_preset", "small")
    preset = c3.select_slider("Model size", list(PRESETS[task]), key="train_preset")
    size = dict(PRESETS[task][preset])
    with st.expander("Model shape and optimiser (the device is chosen in the sidebar)"):
        a1, a2, a3 = st.columns(3)
        size["d_model"] = a1.number_input("d_model", 16, 256, size["d_model"], step=16)
        size["n_layers"] = a2.number_input("layers", 1, 6, size["n_layers"])
        size["n_heads"] = a3.number_input("heads", 1, 8, size["n_heads"])
        size["d_ff"] = 4 * size["d_model"]
        b1, b2, b3, b4 = st.columns(4)
        steps = b1.number_input(
            "Steps", 10, 10_000, remembered(f"steps_{task}", DEFAULT_STEPS[task]), step=100
        )
        batch_size = b2.number_input("Batch size", 1, 256, remembered(f"batch_{task}", DEFAULT_BATCH[task]))
        lr = b3.number_input(
            "Peak learning rate", 1e-5, 1e-1, remembered(f"lr_{task}", DEFAULT_LR[task]), format="%.4f"
        )
        remember(f"steps_{task}", steps), remember(f"batch_{task}", batch_size), remember(f"lr_{task}", lr)
        schedule = b4.selectbox(
            "Schedule",
            ["cosine", "vaswani", "constant"],
            help="cosine: warm-up then cosine decay; vaswani: warm-up then 1/sqrt(step)",
        )
    text, corpus_error = None, False
    device = str(current_device())
    if task == "lm":
        upload = st.file_uploader(
            "Corpus (optional): a UTF-8 .txt file up to 5 MB, e.g. TinyShakespeare",
            type=["txt"],
            key="train_corpus",
        )
        if upload is not None:
            try:
                text = corpus_from_bytes(upload.getvalue(), name=upload.name, max_bytes=MAX_UPLOAD_BYTES)
                st.caption(f"Using **{upload.name}**: {len(text):,} characters, {len(set(text))} distinct.")
            except InputError as e:
                st.error(f"{e}. Remove the file to train on the default corpus.")
                corpus_error = True
        else:
            st.caption("Using the default corpus: the documentation topics bundled with Python.")

run = current_run()
start_col, stop_col, info_col = st.columns([1, 1, 4])
active = run is not None and not run.finished
if start_col.button("Start", type="primary", icon=":material/play_arrow:", disabled=active or corpus_error):
    try:
        config = TrainConfig(
            task=task,
            steps=int(steps),
            batch_size=int(batch_size),
            lr=float(lr),
            schedule=schedule,
            warmup=min(200, int(steps) // 10),
            device=device,
            eval_every=max(1, int(steps) // 5),
            snapshot_every=max(1, int(steps) // 40),
        )
        model, task_obj = prepare_run(config, positions, text=text, **size)
    except (ConfigError, InputError) as e:
        st.error(str(e))
        st.stop()
    reversal_eval_lengths(task_obj)
    stamp = datetime.datetime.now().strftime("%H:%M:%S")
    name = "reverse" if task == "reverse" else "gpt"
    start_run(BackgroundRun(model, task_obj, config, run_slots(), label=f"my-{name}-{positions} ({stamp})"))
    st.session_state["train_run_positions"] = positions
    st.rerun()
if stop_col.button("Stop", icon=":material/stop:", disabled=not active):
    run.stop()
    run.join(timeout=5)
    st.rerun()
slots = run_slots()
info_col.caption(
    f"Device: **{device}** · server-wide: {slots.running} of "
    f"{slots.max_running} training slots busy, {slots.waiting} waiting"
)


# ---------------------------------------------------------------- 2. live progress
def show_progress(run: BackgroundRun) -> None:
    if run.status == "queued":
        st.info(f"Waiting for a free training slot: you are number {run.queue_position or 1} in the queue.")
        return
    total = run.config.steps
    done = run.step
    rate = done / run.elapsed if run.elapsed else 0.0
    eta = (total - done) / rate if rate else float("nan")
    st.progress(
        done / total,
        text=(
            f"**{run.label}** · {run.status} · step {done:,} / {total:,} · {run.tokens_per_s:,.0f} tokens/s"
            + (
                f" · ETA {eta:,.0f} s"
                if run.status == "running" and eta == eta
                else f" · {run.elapsed:,.1f} s"
            )
        ),
    )
    if run.error:
        st.error(f"The run stopped: {run.error}")
    if not run.steps:
        return
    stride = max(1, len(run.steps) // 400)  # keep the charts light
    curve = pd.DataFrame(
        {"step": run.steps[::stride], "loss": run.losses[::stride], "learning rate": run.lrs[::stride]}
    ).set_index("step")
    left, right = st.columns(2)
    left.markdown("**Training loss**")
    left.line_chart(curve[["loss"]], height=220)
    right.markdown("**Learning rate**")
    right.line_chart(curve[["learning rate"]], height=220)
    if run.evals:
        evals = pd.DataFrame(run.evals).set_index("step")
        metric = [c for c in evals.columns if c.startswith("exact_match@") or c == "val_loss"]
        st.markdown(
            "**Evaluation** ("
            + (
                "greedy exact match per length"
                if run.task.name == "reverse"
                else "validation loss, nats per character"
            )
            + ")"
        )
        st.line_chart(evals[metric], height=220)
    show_snapshots(run)


def show_snapshots(run: BackgroundRun) -> None:
    if not run.snapshots:
        return
    st.markdown(f"**Attention of the probe input “{run.task.probe}” during training**")
    kinds = [k for k in ("cross", "encoder_self", "decoder_self", "self") if k in run.snapshots[0][1]]
    c1, c2, c3, c4 = st.columns([3, 2, 1, 1])
    index = (
        c1.slider(
            "Snapshot", 0, len(run.snapshots) - 1, len(run.snapshots) - 1, key="snap_index", format="%d"
        )
        if len(run.snapshots) > 1
        else 0
    )
    kind = c2.selectbox("Attention", kinds, key="snap_kind")
    step, snap = run.snapshots[index]
    L, H = snap[kind].shape[:2]
    layer = c3.number_input("Layer", 0, L - 1, L - 1, key="snap_layer")
    head = c4.number_input("Head", 0, H - 1, 0, key="snap_head")
    queries = snap["target_tokens"] if kind in ("cross", "decoder_self") else snap["source_tokens"]
    keys = snap["target_tokens"] if kind == "decoder_self" else snap["source_tokens"]
    title = f"step {step}: {kind} layer {layer} head {head}"
    if "output" in snap:
        title += f" — output “{snap['output']}”"
    st.plotly_chart(
        head_heatmap(snap[kind][layer, head], queries, keys, title, height=380),
        config=PNG_CONFIG,
        key="snap_fig",
    )


def live_panel(run: BackgroundRun) -> None:
    show_progress(run)
    if run.finished and st.session_state.get("train_seen") != (run.ticket, run.status):
        st.session_state["train_seen"] = (run.ticket, run.status)
        st.rerun(scope="app")  # draw the results section below


def show_results(run: BackgroundRun) -> None:
    st.subheader("Results")
    if run.status == "stopped" and not run.metrics:
        st.info("The run was stopped before its final evaluation; the model is still yours to explore.")
    if run.task.name == "reverse" and run.metrics:
        em, tok = run.metrics["exact_match"], run.metrics["token_accuracy"]
        table = pd.DataFrame(
            {
                "length": [int(n) for n in em],
                "greedy exact match": list(em.values()),
                "token accuracy (teacher-forced)": list(tok.values()),
            }
        )
        table["in training range"] = table["length"].between(run.config.min_len, run.config.max_len)
        st.dataframe(table, hide_index=True)
    elif run.metrics:
        st.metric("Validation loss (nats per character)", f"{run.metrics['val_loss']:.3f}")
    if run.model is None:
        return
    if run.task.name == "lm":
        from transformer_core.generation import generate

        prompt = run.task.probe
        ids = run.task.tokenizer.encode(prompt)
        sample = generate(run.model, ids, 200, temperature=0.8, seed=0)
        st.markdown("**Sample** (temperature 0.8)")
        st.code(prompt + run.task.tokenizer.decode([s.token for s in sample]), language=None, wrap_lines=True)
    label = publish(run, st.session_state.get("train_run_positions", "?"))
    st.success(
        f"**{label}** is now a choice in the {'Reversal' if run.task.name == 'reverse' else 'GPT'} "
        "explorer for the rest of this session."
    )
    from lab.resources import MY_MODELS_KEY

    ckpt = st.session_state[MY_MODELS_KEY][label]
    st.download_button(
        "Download checkpoint (.zip: safetensors + JSON)",
        checkpoint_zip(ckpt),
        file_name=f"{label.split(' ')[0]}.zip",
        mime="application/zip",
        icon=":material/download:",
    )


if run is not None:
    if run.finished:
        live_panel(run)
        show_results(run)
    else:  # redraw only this panel every second while the run trains
        st.fragment(run_every=1.0)(live_panel)(run)

# ---------------------------------------------------------------- 3. length generalisation
st.divider()
st.subheader("Length generalisation: which positional scheme reverses longer strings?")
st.caption(
    "Every reversal model was trained on strings of 3 to 10 letters. Lengths 12 and 15 were "
    "never seen. The first three rows are the seed chapter's static numbers (teacher-forced "
    "token accuracy); our rows are measured on 200 random strings per length."
)
SEED_ROWS = {  # teacher-forced per-token accuracy, from the seed chapter (static)
    "vanilla seq2seq (seed)": {"3": 0.92, "5": 0.55, "7": 0.28, "10": 0.10, "15": 0.05},
    "+ Bahdanau attention (seed)": {"3": 0.99, "5": 0.97, "7": 0.94, "10": 0.90, "15": 0.55},
    "Transformer (seed)": {"3": 1.0, "5": 1.0, "7": 1.0, "10": 1.0, "15": 0.08},
}
results = length_table()
metric = st.radio(
    "Metric", ["greedy exact match", "token accuracy (teacher-forced)"], horizontal=True, key="length_metric"
)
key = "exact_match" if metric.startswith("greedy") else "token_accuracy"
rows = []
if key == "token_accuracy":
    for name, values in SEED_ROWS.items():
        rows.append({"model": name, **{f"len {n}": values.get(str(n)) for n in REPORT_LENGTHS}})
for name, entry in results.get("rows", {}).items():
    rows.append({"model": name, **{f"len {n}": entry[key].get(str(n)) for n in REPORT_LENGTHS}})
if rows:
    table = pd.DataFrame(rows).set_index("model")
    bars = st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f", width="small")
    st.dataframe(table, column_config={c: bars for c in table.columns}, width="stretch")
    if results.get("command"):
        st.caption(f"Made by `{results['command']}`")
else:
    st.info("No precomputed results shipped (checkpoints/length_generalization.json is missing).")
rerun_cols = st.columns([2, 1])
row_scheme = rerun_cols[0].selectbox("Re-run one row yourself", POSITION_SCHEMES, key="length_rerun_scheme")
if rerun_cols[1].button("Train this row", disabled=active, key="length_rerun"):
    config = TrainConfig(
        task="reverse",
        steps=3000,
        batch_size=64,
        lr=2e-3,
        warmup=200,
        device=str(current_device()),
        eval_every=600,
        snapshot_every=75,
    )
    model, task_obj = prepare_run(config, row_scheme, **PRESETS["reverse"]["small"])
    reversal_eval_lengths(task_obj)
    stamp = datetime.datetime.now().strftime("%H:%M:%S")
    start_run(BackgroundRun(model, task_obj, config, run_slots(), label=f"my-reverse-{row_scheme} ({stamp})"))
    st.session_state["train_run_positions"] = row_scheme
    st.rerun()
