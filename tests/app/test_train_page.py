"""/train driven through Streamlit's AppTest: a run to the end in a run process, stop,
the box-wide queue, links by run id (after a restart too) and the unknown-id notice."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.serving import ProgressWriter, RunRequest, new_run_id
from attention_lab.serving.sqlite_store import SQLiteRunStore
from attention_lab.training.scrubber import telling_head
from tests.app.figures import charts as chart_specs
from tests.app.figures import heatmaps, tables
from transformer_core.train import TrainConfig, prepare_run
from transformer_core.train.trainer import SnapshotEvent

ROOT = Path(__file__).resolve().parents[2]


def open_train(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    at.run()
    at.switch_page("views/train.py")
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception
    return at


def set_steps(at: AppTest, steps: int) -> None:
    next(n for n in at.number_input if n.label == "Steps").set_value(steps)


def click(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label == label).click().run()


def wait_until(predicate, timeout: float = 90.0) -> None:
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def runs_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "runs"
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(root))
    monkeypatch.setenv("ATTENTION_LAB_RUN_NICE", "0")
    return root


def queue(max_running: int = 2) -> SQLiteRunStore:
    return SQLiteRunStore(max_running=max_running)


def status(run_id: str) -> str:
    return queue().info(run_id).status


def test_the_form_opens_on_the_watched_run_of_each_task() -> None:
    """Issue 23: the default reversal run is the one a class can watch (one layer of two
    heads, 1000 steps at lr 0.01); another task brings its own size and optimiser."""

    def form(at: AppTest) -> tuple:
        return (
            at.select_slider(key="train_preset").value,
            at.number_input(key="train_n_layers").value,
            at.number_input(key="train_n_heads").value,
            at.number_input(key="train_steps").value,
            at.number_input(key="train_lr").value,
        )

    at = open_train()
    assert form(at) == ("tiny", 1, 2, 1000, 0.01)
    at.radio(key="train_task").set_value("lm").run()
    assert form(at) == ("small", 4, 4, 1000, 3e-3)
    at.radio(key="train_task").set_value("reverse").run()
    assert form(at) == ("tiny", 1, 2, 1000, 0.01)


def test_tiny_reversal_run_to_completion_and_its_link_after_a_restart() -> None:
    at = open_train()
    at.select_slider(key="train_preset").set_value("tiny")
    set_steps(at, 20)
    click(at, "Start")
    run_id = at.session_state["train_run"]
    assert run_id.startswith("run-") and at.query_params["run"] == run_id
    wait_until(lambda: status(run_id) == "done", timeout=180)
    info = queue().info(run_id)
    assert info.pid and info.pid != os.getpid()  # trained in a child process
    at.run()
    assert not at.exception
    progress = at.get("progress")[0].proto.text
    assert "done" in progress and "step 20 / 20" in progress
    specs = chart_specs(at)
    [(steps, losses)] = heatmaps(specs["train_loss_fig"])  # the loss curve: one point per logged step
    assert steps[-1] == 20 and np.all(np.diff(steps) > 0) and np.isfinite(losses).all()
    assert [s["name"] for s in specs["train_eval_fig"]["panels"][0]["series"]][:1] == ["length 3"]
    assert "train_lr_fig" in specs
    table = tables(at)["train_results"]
    assert list(table["length"]) == [3, 5, 7, 10, 12, 15]
    assert table["greedy exact match"].between(0, 1).all()
    assert table["in training range"].tolist() == [True, True, True, True, False, False]
    assert any("is now a choice in the Reversal explorer" in s.value for s in at.success)
    assert any(f"/reversal?checkpoint={run_id}" in c.value for c in at.code)
    assert run_id in at.session_state["my_models"]
    assert at.get("download_button")
    assert "snap_fig" in chart_specs(at)  # the snapshot scrubber's heatmap

    from attention_lab.models.resources import _store  # a restart of the app: no cached queue, a new session

    _store.clear()
    later = open_train({"run": run_id})
    assert "step 20 / 20" in later.get("progress")[0].proto.text
    assert run_id in later.session_state["my_models"]


def test_a_tiny_induction_run_plots_every_heads_detector_scores_beside_the_loss() -> None:
    at = open_train()
    at.radio(key="train_task").set_value("induction").run()
    assert at.number_input(key="train_steps").value == 1500  # the task's preset (train/presets.py)
    assert at.selectbox(key="train_positions").value == "learned"  # the scheme its heads form with
    at.select_slider(key="train_preset").set_value("tiny").run()
    assert (at.number_input(key="train_n_layers").value, at.number_input(key="train_n_heads").value) == (2, 2)
    set_steps(at, 20)
    click(at, "Start")
    run_id = at.session_state["train_run"]
    assert queue().info(run_id).task == "induction"
    wait_until(lambda: status(run_id) == "done", timeout=180)
    at.run()
    assert not at.exception
    assert "step 20 / 20" in at.get("progress")[0].proto.text
    specs = chart_specs(at)
    score_figs = [specs[f"train_{score}_fig"] for score in ("previous_token", "induction")]
    for fig in score_figs:  # previous-token and induction, one line per head of 2 layers x 2 heads
        series = fig["panels"][0]["series"]
        assert [t["name"] for t in series] == ["L0 H0", "L0 H1", "L1 H0", "L1 H1"]
        assert [t["dash"] for t in series] == [None, None, "dot", "dot"]  # a dash style per layer
        steps, scores = heatmaps(fig)[0]
        assert len(steps) == 20 and ((scores >= 0) & (scores <= 1)).all()  # an evaluation per step
    scrub = chart_specs(at)["snap_fig"]  # the scrubber: the probe's attention at a snapshot
    assert scrub["kind"] == "head" and heatmaps(scrub)[0].shape == (len(scrub["y"]), len(scrub["x"]))
    assert at.selectbox(key="snap_kind").options == ["self"]
    first, repeat = heatmaps(specs["train_ic_fig"])  # the loss on the first copy and on the repeat
    assert len(first[0]) == len(repeat[0]) == 20
    labels = [m.label for m in at.metric][:2]
    assert labels == ["Loss on the first copy (nats · perplexity)", "Loss on the repeat (nats · perplexity)"]
    loss, ppl = (float(x.replace(",", "")) for x in at.metric[1].value.split(" · "))
    assert ppl == pytest.approx(math.exp(loss), rel=1e-2)  # perplexity = e^loss, as printed
    assert any(f"/heads?checkpoint={run_id}" in c.value for c in at.code)

    for page, prefix in (("heads", "heads_"), ("gpt", "gpt_")):  # the run opens where a GPT is expected
        at.switch_page(f"views/{page}.py")
        at.query_params = {"checkpoint": run_id}
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.session_state[prefix + "checkpoint"] == run_id
        label = f"{queue().info(run_id).label} · {run_id[:12]}…"  # the run by its name, the id still the link
        assert label in at.selectbox(key=prefix + "checkpoint").options, at.selectbox(
            key=prefix + "checkpoint"
        ).options
    at.switch_page("views/train.py")
    at.query_params.clear()  # back by the menu: the page names its run in the URL again
    at.run()
    assert at.query_params["run"] in (run_id, [run_id])


@pytest.mark.parametrize("kind", ["bahdanau", "gru"])
def test_a_recurrent_baseline_trains_and_its_alignment_forms_in_the_scrubber(kind: str) -> None:
    """Chapter 004's baselines from /train: the run's model is the recurrent kind with no scheme;
    Bahdanau's one alignment is the scrubber's map, the GRU says it has none."""
    from transformer_core.io.checkpoint import load_checkpoint

    at = open_train()
    at.radio(key="train_model").set_value(kind).run()
    assert (
        at.selectbox(key="train_no_positions").proto.disabled
        and at.number_input(key="train_n_heads").proto.disabled
    )
    assert at.selectbox(key="train_no_positions").value == "none"  # what the run will use
    at.select_slider(key="train_preset").set_value("tiny").run()
    set_steps(at, 20)
    click(at, "Start")
    run_id = at.session_state["train_run"]
    assert f"-{kind} " in queue().info(run_id).label
    wait_until(lambda: status(run_id) == "done", timeout=180)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    config = load_checkpoint(run_id).config
    assert (config.model, config.positions, config.n_layers, config.n_heads) == (kind, "none", 1, 1)
    specs = chart_specs(at)
    if kind == "bahdanau":
        assert at.selectbox(key="snap_kind").options == ["cross"]
        weights = heatmaps(specs["snap_fig"])[0]
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-3)  # one alignment per output step
    else:
        assert "snap_fig" not in specs
        assert any("This model has no attention" in c.value for c in at.caption)
    assert any(f"/reversal?checkpoint={run_id}" in c.value for c in at.code)


def test_stop_ends_the_run_within_a_second() -> None:
    at = open_train()
    at.select_slider(key="train_preset").set_value("tiny")
    set_steps(at, 10_000)
    click(at, "Start")
    run_id = at.session_state["train_run"]
    from attention_lab.serving import RunProgress

    progress = RunProgress(queue().folder(run_id))
    wait_until(lambda: (progress.refresh(), progress.step >= 2)[1], timeout=180)
    t0 = time.perf_counter()
    click(at, "Stop")
    assert status(run_id) == "stopped" and time.perf_counter() - t0 < 5.0  # includes the page rerun
    assert not at.exception
    assert "stopped" in at.get("progress")[0].proto.text
    assert "paused" not in at.get("progress")[0].proto.text  # the suite's runs never pause

    # a run that gave its CPU to pages (serving.priority.CpuPressure) says so under its progress bar
    with open(queue().folder(run_id) / "progress.jsonl", "a", encoding="utf-8") as f:
        f.write('{"kind": "paused", "seconds": 4.2}\n')
    at.run()
    assert "paused 4 s while the server was busy" in at.get("progress")[0].proto.text


def test_runs_beyond_the_cap_wait_in_a_visible_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_MAX_RUNS", "1")
    first, second = open_train(), open_train()
    for at in (first, second):
        at.select_slider(key="train_preset").set_value("tiny")
        set_steps(at, 10_000)
    click(first, "Start")
    run_a = first.session_state["train_run"]
    wait_until(lambda: status(run_a) == "running", timeout=180)
    click(second, "Start")
    run_b = second.session_state["train_run"]
    assert queue().info(run_b).position == 1
    second.run()
    assert any("number 1 in the queue" in i.value for i in second.info)
    click(first, "Stop")
    wait_until(lambda: status(run_b) in ("starting", "running"), timeout=60)
    second.run()
    click(second, "Stop")
    wait_until(lambda: status(run_b) == "stopped", timeout=30)
    assert status(run_a) == "stopped"


def test_an_unknown_run_id_shows_a_notice() -> None:
    at = open_train({"run": new_run_id()})
    assert any("Unknown or expired run" in e.value for e in at.error)
    assert not at.get("progress")


def test_no_stray_optimiser_values_are_written_under_the_settings() -> None:
    """Issue 11 #4: a bare expression (Streamlit magic) wrote "300 32 0.003" under the boxes."""
    import re

    at = open_train()
    for task in ("lm", "induction", "reverse"):
        at.radio(key="train_task").set_value(task).run()
        set_steps(at, 300)
        at.run()
        assert not at.exception
        texts = [e.value for kind in ("markdown", "text", "code", "json") for e in at.get(kind)]
        stray = [t for t in texts if re.fullmatch(r"\s*[\d.,\s]+\s*", str(t))]
        assert not stray, stray
        assert not any("300 32" in str(t) for t in texts)


class FakeRun:
    """A run marked running by this test process (no worker): the test writes its progress
    and real attention snapshots of a tiny untrained model, one at a time."""

    def __init__(self) -> None:
        self.queue = SQLiteRunStore(max_running=2, spawn=False)
        train = dict(task="reverse", steps=1000, batch_size=4, device="cpu")
        self.id = self.queue.submit(RunRequest(train=train, positions="none", size="tiny", label="held"))
        assert self.queue.mark_running(self.id, os.getpid())
        self.model, self.task = prepare_run(TrainConfig(**train), "none", size="tiny")
        self.writer = ProgressWriter(self.queue.folder(self.id))
        self.step = 0

    def snapshots(self, count: int) -> None:
        for _ in range(count):
            self.step += 25
            self.writer.write({"kind": "step", "step": self.step, "total": 1000, "loss": 1.0, "lr": 1e-3,
                               "tokens_per_s": 100.0, "elapsed": self.step / 10})  # fmt: skip
            self.writer.record(SnapshotEvent(self.step, self.task.snapshot(self.model)))


def scrubber_widget(at: AppTest):
    return next(s for s in at.select_slider if s.label == "Snapshot at step")


def scrubber(at: AppTest) -> tuple[int, int, str]:
    """(the step the scrubber shows, its latest step, the heatmap's title)."""
    slider = scrubber_widget(at)
    title = chart_specs(at)["snap_fig"]["title"]
    return int(slider.value), int(slider.options[-1].replace(",", "")), title


def play_label(at: AppTest) -> str:
    return at.button(key="snap_play").label


def test_the_scrubber_plays_and_holds_across_refreshes_of_a_running_run() -> None:
    """Issue 11 #3: playing follows each new snapshot; pausing, or moving the scrubber,
    holds the position while new snapshots arrive; Follow latest plays again."""
    run = FakeRun()
    run.snapshots(3)  # steps 25, 50, 75
    at = open_train({"run": run.id})
    assert scrubber(at)[:2] == (75, 75) and play_label(at) == "Pause"
    assert any("following the latest: snapshot 3 of 3, step 75" in c.value for c in at.caption)
    run.snapshots(2)
    at.run()  # a refresh of the live panel
    assert scrubber(at)[:2] == (125, 125)

    scrubber_widget(at).set_value(50).run()  # the user moves the scrubber: held
    value, latest, title = scrubber(at)
    assert (value, latest, title.split(":")[0]) == (50, 125, "step 50")
    assert play_label(at) == "Follow latest"
    for _ in range(3):  # new snapshots arrive, the panel refreshes: the position stays
        run.snapshots(1)
        at.run()
        assert not at.exception
        value, latest, title = scrubber(at)
        assert (value, title.split(":")[0]) == (50, "step 50")
    assert latest == 200
    assert any("paused at snapshot 2 of 8, step 50 (latest: step 200)" in c.value for c in at.caption)

    at.button(key="snap_play").click().run()  # Follow latest: plays again
    assert scrubber(at)[:2] == (200, 200) and play_label(at) == "Pause"
    run.snapshots(1)
    at.run()
    assert scrubber(at)[:2] == (225, 225)

    at.button(key="snap_play").click().run()  # Pause: holds the snapshot shown
    assert scrubber(at)[:2] == (225, 225) and play_label(at) == "Follow latest"
    run.snapshots(2)
    at.run()
    assert scrubber(at)[:2] == (225, 275)
    assert scrubber(at)[2].startswith("step 225:")

    run.queue.finish(run.id, "stopped")  # the run ends: the page keeps the held snapshot
    at.run()
    assert not at.exception
    assert "stopped" in at.get("progress")[0].proto.text
    assert scrubber(at)[:2] == (225, 275)
    assert play_label(at) == "Play"  # a finished run plays its snapshots as a film


def test_a_finished_runs_scrubber_plays_its_snapshots_one_after_another(monkeypatch) -> None:
    """Issue 23 #4: a play button plays the snapshots. Play from the last snapshot starts at
    the first; each tick shows the next; the film stops on the last; Pause holds a frame."""
    import attention_lab.training.scrubber

    monkeypatch.setattr(attention_lab.training.scrubber, "PLAY_SECONDS", 0.0)  # every page run is a tick here
    run = FakeRun()
    run.snapshots(4)  # steps 25 .. 100
    run.queue.finish(run.id, "done")
    at = open_train({"run": run.id})
    assert scrubber(at)[:2] == (100, 100) and play_label(at) == "Play"
    at.button(key="snap_play").click().run()  # from the last: the film starts at the first
    shown = [scrubber(at)[0]]
    assert play_label(at) == "Pause"
    assert any("playing: snapshot" in c.value for c in at.caption)
    while play_label(at) == "Pause" and len(shown) < 10:
        at.run()
        assert not at.exception
        shown.append(scrubber(at)[0])
        assert scrubber(at)[2].startswith(f"step {shown[-1]}:")  # the map is the frame's
    assert shown[0] in (25, 50) and shown[-1] == 100 and play_label(at) == "Play"
    assert shown == sorted(shown) and set(shown) >= {50, 75, 100}
    at.button(key="snap_play").click().run()  # play again, then pause on a frame
    at.run()
    frame = scrubber(at)[0]
    at.button(key="snap_play").click().run()
    assert play_label(at) == "Play" and scrubber(at)[0] == frame
    at.run()
    assert scrubber(at)[0] == frame  # held


def test_a_snapshot_opens_on_its_most_telling_head() -> None:
    """Issue 23: the snapshot view opened on the last layer's head 0. Now: the most
    anti-diagonal cross-attention head, the induction head of an induction run, else the
    previous-token head; each planted in one head of random attention here."""
    rng = np.random.default_rng(0)
    letters = list("abcabc")
    n = len(letters)

    def planted(at: tuple[int, int], pattern: np.ndarray) -> np.ndarray:
        weights = rng.dirichlet(np.ones(pattern.shape[-1]), size=(2, 4, pattern.shape[0]))
        weights[at] = pattern
        return weights

    mirror = np.zeros((n + 1, n + 1))  # <sos> + 6 letters read the source (6 letters + <eos>) backwards
    mirror[np.arange(n), n - 1 - np.arange(n)] = 1.0
    mirror[n, n] = 1.0
    source = [*letters, "<eos>"]
    assert telling_head({"cross": planted((1, 2), mirror), "source_tokens": source}, "cross", "reverse") == (
        1,
        2,
    )

    previous = np.eye(n, k=-1)
    previous[0, 0] = 1.0
    snap = {"self": planted((0, 3), previous), "source_tokens": letters}
    assert telling_head(snap, "self", "lm") == (0, 3)
    induction = np.eye(n, k=-1)  # abcabc: the second "a" reads the "b" after the first
    induction[3:, :] = np.eye(n)[[1, 2, 3]]
    assert telling_head(
        {"self": planted((1, 1), induction), "source_tokens": letters}, "self", "induction"
    ) == (1, 1)


def test_the_length_table_says_where_the_seed_rows_are_and_keeps_its_metric() -> None:
    """Issue 23: the caption named three seed rows the default metric hides, and the metric
    went back to greedy exact match after a visit to another page."""
    at = open_train()
    assert any("choose it to see its three printed rows" in c.value for c in at.caption)
    assert not any("chapter 004 reports" in m for m in tables(at)["length_table"].index)
    at.radio(key="length_metric").set_value("token accuracy (teacher-forced)").run()
    index = list(tables(at)["length_table"].index)
    assert sum("(chapter 004 reports)" in m for m in index) == 3 and index[0].endswith(
        "(chapter 004 reports)"
    )
    assert {"GRU seq2seq, no attention", "GRU + Bahdanau attention", "Transformer, t5"} <= set(index)
    assert any("The first three rows are what chapter 004 prints" in c.value for c in at.caption)
    at.switch_page("views/gpt.py").run()
    at.switch_page("views/train.py").run()
    assert at.radio(key="length_metric").value == "token accuracy (teacher-forced)"


def test_the_scrubber_saves_one_heads_film_as_a_gif() -> None:
    """Issue 23: "Save as GIF" exports the scrubber's frames for slides: one frame per
    snapshot, each the head's weights in the charts' colours, its step written above it."""
    import io

    from PIL import Image

    from attention_lab.charts.gif import BAND_PX, colour_table
    from attention_lab.serving import RunProgress
    from attention_lab.training.scrubber import scrubber_gif

    run = FakeRun()
    run.snapshots(3)
    p = RunProgress(run.queue.folder(run.id))
    p.refresh()
    film = Image.open(io.BytesIO(scrubber_gif(p, "cross", 0, 1)))
    assert film.format == "GIF" and film.n_frames == 3
    lut = colour_table()
    for i in range(3):
        film.seek(i)
        weights = p.load_snapshot(i)["cross"][0, 1]
        rgb = film.convert("RGB")
        cell = (rgb.height - BAND_PX) // weights.shape[0]
        for q, k in ((0, 0), (weights.shape[0] - 1, weights.shape[1] - 1)):
            shown = rgb.getpixel((k * cell + cell // 2, BAND_PX + q * cell + cell // 2))
            expected = lut[int(round(float(weights[q, k]) * 255))]
            assert max(abs(int(a) - int(b)) for a, b in zip(shown, expected, strict=True)) <= 12, (i, q, k)
    run.queue.finish(run.id, "stopped")


def test_two_block_variants_train_and_overlay_their_loss_and_gradient_norms() -> None:
    """Issue 39: Post-LN without warm-up beside Pre-LN: each run records its block (and no
    warm-up) in its checkpoint, and "My runs" overlays both losses and every block's
    gradient norm on one chart each."""
    at = open_train()
    set_steps(at, 12)
    at.selectbox(key="train_norm_position").set_value("post")
    at.toggle(key="train_warmup").set_value(False)
    click(at, "Start")
    post = at.session_state["train_run"]
    wait_until(lambda: status(post) == "done", timeout=180)
    at.run()
    at.selectbox(key="train_norm_position").set_value("pre")
    at.toggle(key="train_warmup").set_value(True)
    set_steps(at, 12)
    click(at, "Start")
    pre = at.session_state["train_run"]
    wait_until(lambda: status(pre) == "done", timeout=180)
    at.run()
    meta = json.loads((queue().folder(post) / "checkpoint.json").read_text())
    assert meta["config"]["norm_position"] == "post" and meta["train_args"]["warmup"] == 0
    assert (
        json.loads((queue().folder(pre) / "checkpoint.json").read_text())["config"]["norm_position"] == "pre"
    )
    labels = {i.id: i.label for i in [queue().info(post), queue().info(pre)]}
    assert "-postln" in labels[post] and "-nowarmup" in labels[post] and "postln" not in labels[pre]
    at.multiselect(key="train_overlay").set_value([post, pre]).run()
    assert not at.exception
    specs = chart_specs(at)
    loss = specs["train_overlay_loss"]["panels"][0]["series"]
    assert [s["name"] for s in loss] == [labels[post], labels[pre]]
    grads = [s["name"] for s in specs["train_overlay_grads"]["panels"][0]["series"]]
    assert f"{labels[post]} · encoder.0" in grads and f"{labels[pre]} · decoder.0" in grads
    assert len(grads) == 2 * 2  # one encoder and one decoder block per run (the watched size)
