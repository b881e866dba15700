"""The trainer: it learns, it stops when told, its schedules have the published shapes."""

from __future__ import annotations

import dataclasses
import math
import threading

import numpy as np
import pytest
import torch

from transformer_core.errors import ConfigError
from transformer_core.train import DEFAULT_SIZE, TASKS, train_config
from transformer_core.train.presets import prepare_run
from transformer_core.train.schedules import label_smoothing_target, lr_curves, vaswani_lr, warmup_cosine_lr
from transformer_core.train.tasks import Batch, cross_entropy_loss
from transformer_core.train.trainer import (
    DoneEvent,
    EvalEvent,
    SnapshotEvent,
    StepEvent,
    TrainConfig,
    Trainer,
)


class FixedBatchTask:
    """One fixed LM batch: a model that learns at all drives its loss toward zero."""

    name = "lm"
    probe = "probe"

    def __init__(self, vocab: int = 12) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (4, 12), generator=g)
        self.y = torch.randint(0, vocab, (4, 12), generator=g)

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device) -> Batch:
        return Batch((self.x,), self.y)

    def loss(self, model, batch: Batch, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
        return cross_entropy_loss(model, batch, label_smoothing)

    def evaluate(self, model):
        with torch.no_grad():
            return {"loss": float(self.loss(model, Batch((self.x,), self.y))[0])}

    def snapshot(self, model):
        return {"probe": 1}


def test_trainer_overfits_a_tiny_batch(tiny_config) -> None:
    from transformer_core.models import GPT

    torch.manual_seed(0)
    model = GPT(tiny_config("gpt", vocab_size=12, d_model=32, n_heads=4))
    task = FixedBatchTask()
    start = task.evaluate(model)["loss"]
    events = list(
        Trainer(
            model,
            task,
            TrainConfig(
                task="lm", steps=150, lr=1e-2, warmup=10, eval_every=50, snapshot_every=50, device="cpu"
            ),
        ).run()
    )
    done = events[-1]
    assert isinstance(done, DoneEvent) and not done.cancelled and done.step == 150
    assert start > 2.0 and done.metrics["loss"] < 0.2
    assert sum(isinstance(e, StepEvent) for e in events) == 150
    assert [e.step for e in events if isinstance(e, EvalEvent)] == [6, 12, 25, 50, 100]  # the early rise too
    assert [e.step for e in events if isinstance(e, SnapshotEvent)] == [1, 50, 100, 150]
    short = TrainConfig(task="lm", steps=7, snapshot_every=3, eval_every=0, device="cpu")
    snaps = [e.step for e in Trainer(model, task, short).run() if isinstance(e, SnapshotEvent)]
    assert snaps == [1, 3, 6, 7]  # the last step too
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert steps[0].tokens_per_s > 0 and steps[-1].lr < steps[20].lr  # cosine decays after warm-up


def test_cancel_stops_within_one_step(tiny_config) -> None:
    from transformer_core.models import GPT

    model = GPT(tiny_config("gpt", vocab_size=12))
    stop = threading.Event()
    trainer = Trainer(model, FixedBatchTask(), TrainConfig(task="lm", steps=1000, device="cpu"), stop=stop)
    seen = []
    for event in trainer.run():
        seen.append(event)
        if isinstance(event, StepEvent) and event.step == 5:
            stop.set()
    steps = [e.step for e in seen if isinstance(e, StepEvent)]
    assert steps == [1, 2, 3, 4, 5]
    assert isinstance(seen[-1], DoneEvent) and seen[-1].cancelled and seen[-1].step == 5
    assert seen[-1].metrics == {}


def test_short_reversal_run_improves_accuracy() -> None:
    config = TrainConfig(
        task="reverse", steps=250, batch_size=32, lr=3e-3, warmup=20, device="cpu", eval_every=0, seed=0
    )
    model, task = prepare_run(config, "rope", d_model=32, n_layers=1, n_heads=2, d_ff=64)
    task = dataclasses.replace(task, eval_lengths=(3, 4), eval_samples=60)
    before = task.evaluate(model)
    done = list(Trainer(model, task, config).run())[-1]
    assert before["token_accuracy"]["3"] < 0.3  # about chance: 1 in 27
    assert done.metrics["token_accuracy"]["3"] > before["token_accuracy"]["3"] + 0.2


def test_seeded_runs_are_reproducible() -> None:
    config = TrainConfig(task="reverse", steps=5, batch_size=8, device="cpu", eval_every=0)
    losses = []
    for _ in range(2):
        model, task = prepare_run(config, "alibi", d_model=16, n_layers=1, n_heads=2, d_ff=32)
        task = dataclasses.replace(task, eval_lengths=(3,), eval_samples=4)
        losses.append([e.loss for e in Trainer(model, task, config).run() if isinstance(e, StepEvent)])
    assert losses[0] == losses[1]


def test_vaswani_schedule_peaks_at_warmup_then_decays_as_inverse_sqrt() -> None:
    lrs = [vaswani_lr(s, 512, 4000) for s in range(1, 20001)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == 4000
    assert math.isclose(lrs[3999], 512**-0.5 * 4000**-0.5)
    assert math.isclose(vaswani_lr(16000, 512, 4000) / vaswani_lr(4000, 512, 4000), 0.5)


def test_warmup_cosine_schedule() -> None:
    assert warmup_cosine_lr(0, 1.0, 10, 100) == pytest.approx(0.1)
    assert warmup_cosine_lr(9, 1.0, 10, 100) == pytest.approx(1.0)
    assert warmup_cosine_lr(100, 1.0, 10, 100) == pytest.approx(0.1)
    mid = warmup_cosine_lr(55, 1.0, 10, 100)
    assert mid == pytest.approx(0.1 + 0.9 * 0.5)


@pytest.mark.parametrize(("d_model", "warmup", "total"), [(512, 4000, 50000), (16, 100, 2000), (64, 3, 5)])
def test_the_curves_are_the_step_by_step_schedules(d_model: int, warmup: int, total: int) -> None:
    steps, vaswani, cosine = lr_curves(d_model, warmup, total)
    assert steps.tolist() == list(range(1, total + 1))
    np.testing.assert_allclose(vaswani, [vaswani_lr(int(s), d_model, warmup) for s in steps], rtol=1e-12)
    peak = vaswani_lr(warmup, d_model, warmup)
    stepped = [warmup_cosine_lr(int(s) - 1, peak, warmup, total) for s in steps]
    np.testing.assert_allclose(cosine, stepped, rtol=1e-12)


def test_train_config_lr_schedule_peak_equals_lr() -> None:
    cfg = TrainConfig(schedule="vaswani", lr=1e-3, warmup=100, steps=1000)
    assert max(cfg.lr_at(s) for s in range(1000)) == pytest.approx(1e-3)


def test_label_smoothing_target_matches_torch_loss() -> None:
    dist = torch.tensor(label_smoothing_target(5, 2, 0.1))
    assert dist.sum().item() == pytest.approx(1.0)
    assert dist[2].item() == pytest.approx(0.9 + 0.02)
    logits = torch.randn(1, 5)
    expected = -(dist * torch.log_softmax(logits, -1)).sum()
    got = torch.nn.functional.cross_entropy(logits, torch.tensor([2]), label_smoothing=0.1)
    assert got.item() == pytest.approx(expected.item(), rel=1e-5)


@pytest.mark.parametrize(
    ("field", "value"),
    [("steps", 0), ("lr", 0.0), ("schedule", "linear"), ("device", "tpu"), ("label_smoothing", 1.0)],
)
def test_bad_train_config_names_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^{field}"):
        TrainConfig(**{field: value})


def test_random_positions_are_increasing_distinct_and_in_range() -> None:
    from transformer_core.io.data import random_positions

    g = torch.Generator().manual_seed(0)
    draws = [random_positions(11, 32, g) for _ in range(50)]
    for p in draws:
        assert p.shape == (11,) and bool((p[1:] > p[:-1]).all()) and 0 <= int(p[0]) and int(p[-1]) < 32
    assert max(int(p[-1]) for p in draws) > 20  # positions past the training lengths get used


def test_randomized_positions_reach_the_model() -> None:
    config = TrainConfig(
        task="reverse", steps=3, batch_size=8, device="cpu", eval_every=0, random_positions=True
    )
    model, task = prepare_run(config, "learned", d_model=16, n_layers=1, n_heads=2, d_ff=32)
    assert task.random_positions == model.config.max_len == 32
    batch = task.batch(8, torch.Generator().manual_seed(1), torch.device("cpu"))
    src_pos, tgt_pos = batch.options["src_positions"], batch.options["tgt_positions"]
    src, tgt_in = batch.inputs  # (B, Ts), (B, Tt)
    plain = model(src, tgt_in)
    shifted = model(src, tgt_in, src_positions=src_pos, tgt_positions=tgt_pos)
    same = model(
        src,
        tgt_in,
        src_positions=torch.arange(src.size(1)),
        tgt_positions=torch.arange(tgt_in.size(1)),
    )
    assert torch.equal(plain, same) and not torch.allclose(plain, shifted)
    task = dataclasses.replace(task, eval_lengths=(3,), eval_samples=4)
    assert list(Trainer(model, task, config).run())[-1].step == 3
    with pytest.raises(ConfigError, match="random_positions"):
        prepare_run(TrainConfig(task="lm", random_positions=True, block_size=32), "learned")


def test_tasks_are_immutable_and_share_one_batch_type() -> None:
    config = TrainConfig(task="reverse", steps=1, batch_size=4, device="cpu")
    _, task = prepare_run(config, "rope", size="tiny")
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.eval_samples = 1  # type: ignore[misc]
    lm_model, lm = prepare_run(TrainConfig(task="lm", block_size=16, device="cpu"), "learned", size="tiny")
    g = torch.Generator().manual_seed(0)
    for t in (task, lm):
        batch = t.batch(4, g, torch.device("cpu"))
        assert isinstance(batch, Batch) and batch.targets.shape[0] == 4
    assert lm.batch(4, g, torch.device("cpu")).tokens == 4 * 16
    assert lm_model.config.max_len == lm.block_size == 16


def test_presets_are_the_one_home_of_the_defaults() -> None:
    from attention_lab.serving import page_config
    from transformer_core.io.checkpoint import load_checkpoint
    from transformer_core.train.presets import model_config, train_config
    from transformer_core.train.registry import REPORT_LENGTHS

    for task, name in (("reverse", "reverse-rope"), ("lm", "gpt-rope")):
        shipped = load_checkpoint(name).config
        assert model_config(task, "rope", shipped.vocab_size, max_len=shipped.max_len) == shipped
    row = page_config("reverse")  # "Train this row" and the form's defaults are one config
    assert (row.steps, row.batch_size, row.lr, row.warmup, row.eval_every, row.snapshot_every) == (
        1000,
        64,
        1e-2,
        100,
        200,
        25,
    )  # fmt: skip  (a watched run: short enough for a lecture)
    assert TASKS["reverse"].watched_size == "tiny" and TASKS["lm"].watched_size == DEFAULT_SIZE == "small"
    cli = train_config("reverse")  # the command line's, which trained the shipped checkpoints
    assert (cli.steps, cli.batch_size, cli.lr) == (3000, 64, 2e-3)
    assert page_config("lm", steps=100).snapshot_every == 2
    _, task = prepare_run(row, "rope")
    assert task.eval_lengths == REPORT_LENGTHS == (3, 5, 7, 10, 12, 15)
    with pytest.raises(ConfigError, match="steps"):
        page_config("reverse", steps=10**6)


@pytest.mark.parametrize("task", ["lm", "induction"])
def test_randomized_positions_are_refused_where_the_task_cannot_use_them(task: str) -> None:
    config = TrainConfig(task=task, steps=1, batch_size=2, device="cpu", random_positions=True)
    with pytest.raises(ConfigError, match="random_positions: only the reversal task supports it"):
        prepare_run(config, "learned")


def test_every_registered_task_builds_a_model_and_trains_a_step() -> None:
    """The registry is the one description of a task: each entry's shape, optimiser defaults
    and builder give a model that trains (its config names the registry's architecture)."""
    for name, recipe in TASKS.items():
        config = train_config(name, steps=1, batch_size=2, device="cpu", eval_every=0, block_size=16)
        model, task = prepare_run(config, recipe.positions or "rope", size=next(iter(recipe.sizes)))
        assert model.config.arch == recipe.arch and config.lr == recipe.optim.lr
        events = list(Trainer(model, task, config).run())
        assert isinstance(events[-1], DoneEvent) and events[-1].step == 1
