"""The trainer: it learns, it stops when told, its schedules have the published shapes."""

from __future__ import annotations

import math
import threading

import pytest
import torch

from transformer_core.errors import ConfigError
from transformer_core.train.schedules import label_smoothing_target, vaswani_lr, warmup_cosine_lr
from transformer_core.train.trainer import (
    DoneEvent,
    EvalEvent,
    SnapshotEvent,
    StepEvent,
    TrainConfig,
    Trainer,
    prepare_run,
)


class FixedBatchTask:
    """One fixed LM batch: a model that learns at all drives its loss toward zero."""

    name = "lm"

    def __init__(self, vocab: int = 12) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randint(0, vocab, (4, 12), generator=g)
        self.y = torch.randint(0, vocab, (4, 12), generator=g)

    def batch(self, batch_size, generator, device):
        return self.x, self.y

    def loss(self, model, batch, label_smoothing=0.0):
        x, y = batch
        logits = model(x)
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten()), x.numel()

    def evaluate(self, model):
        with torch.no_grad():
            return {"loss": float(self.loss(model, (self.x, self.y))[0])}

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
    assert [e.step for e in events if isinstance(e, EvalEvent)] == [50, 100]
    assert [e.step for e in events if isinstance(e, SnapshotEvent)] == [1, 50, 100, 150]
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
    task.eval_lengths, task.eval_samples = [3, 4], 60
    before = task.evaluate(model)
    done = list(Trainer(model, task, config).run())[-1]
    assert before["token_accuracy"]["3"] < 0.3  # about chance: 1 in 27
    assert done.metrics["token_accuracy"]["3"] > before["token_accuracy"]["3"] + 0.2


def test_seeded_runs_are_reproducible() -> None:
    config = TrainConfig(task="reverse", steps=5, batch_size=8, device="cpu", eval_every=0)
    losses = []
    for _ in range(2):
        model, task = prepare_run(config, "alibi", d_model=16, n_layers=1, n_heads=2, d_ff=32)
        task.eval_lengths, task.eval_samples = [3], 4
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


def test_train_config_lr_schedule_peak_equals_lr() -> None:
    cfg = TrainConfig(schedule="vaswani", lr=1e-3, warmup=100, steps=1000)
    assert max(cfg.lr_at(s, 64) for s in range(1000)) == pytest.approx(1e-3)


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
    batch, src_pos, tgt_pos = task.batch(8, torch.Generator().manual_seed(1), torch.device("cpu"))
    plain = model(batch.src, batch.tgt_in)
    shifted = model(batch.src, batch.tgt_in, src_positions=src_pos, tgt_positions=tgt_pos)
    same = model(
        batch.src,
        batch.tgt_in,
        src_positions=torch.arange(batch.src.size(1)),
        tgt_positions=torch.arange(batch.tgt_in.size(1)),
    )
    assert torch.equal(plain, same) and not torch.allclose(plain, shifted)
    task.eval_lengths, task.eval_samples = [3], 4
    assert list(Trainer(model, task, config).run())[-1].step == 3
    with pytest.raises(ConfigError, match="random_positions"):
        prepare_run(TrainConfig(task="lm", random_positions=True, block_size=32), "learned")
