"""Data-parallel training: shards of the global batch (no processes), and a real
`torchrun --nproc_per_node=2 -m transformer_core train` on CPU (gloo) that follows the
single-process run with the same global batch step by step."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_core.cli import main
from transformer_core.errors import ConfigError
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.data import reversal_batch, reversal_tokenizer
from transformer_core.train.distributed import (
    ShardedTask,
    World,
    check_global_batch,
    distribute,
    main_rank_events,
    shard_batch,
    world_from_env,
)
from transformer_core.train.tasks import ReversalTask
from transformer_core.train.trainer import DoneEvent, StepEvent

ROOT = Path(__file__).resolve().parents[2]
LOSS_RTOL = 1e-4  # per-step loss, 2 processes vs 1 with the same global batch (measured: 2e-7)
LOGITS_ATOL = 1e-4  # final weights' logits, 2 processes vs 1 (measured: 7e-7)
TORCHRUN_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
TINY_RUN = (
    "train", "--task", "reverse", "--positions", "alibi", "--steps", "30", "--batch-size", "16",
    "--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--warmup", "5", "--device", "cpu",
    "--quiet", "--json",
)  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(nproc: int, *args: str) -> subprocess.CompletedProcess:
    """`torchrun --nproc_per_node=nproc -m transformer_core ARGS` with this Python, on loopback."""
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_ENV}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    launcher = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--nnodes=1"]
    launcher += ["--master_addr=127.0.0.1", f"--master_port={free_port()}"]
    cmd = [*launcher, "-m", "transformer_core", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)


def losses(log: Path) -> list[float]:
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The tiny reversal run once in this process and once as 2 torchrun processes."""
    one, two = tmp_path_factory.mktemp("one"), tmp_path_factory.mktemp("two")
    with pytest.MonkeyPatch.context() as patch:
        for name in TORCHRUN_ENV:
            patch.delenv(name, raising=False)
        assert main([*TINY_RUN, "--out", str(one / "ckpt"), "--loss-log", str(one / "loss.jsonl")]) == 0
    result = torchrun(2, *TINY_RUN, "--out", str(two / "ckpt"), "--loss-log", str(two / "loss.jsonl"))
    assert result.returncode == 0, result.stderr
    return {"one": one, "two": two, "stdout": result.stdout, "stderr": result.stderr}


def test_two_processes_follow_the_single_process_loss_curve(runs) -> None:
    single, ddp = losses(runs["one"] / "loss.jsonl"), losses(runs["two"] / "loss.jsonl")
    assert len(single) == len(ddp) == 30
    assert ddp == pytest.approx(single, rel=LOSS_RTOL)
    assert ddp[-1] < ddp[0]  # it learned


def test_rank_zero_alone_reports_and_writes_one_checkpoint(runs) -> None:
    two: Path = runs["two"]
    payload = json.loads(runs["stdout"])  # exactly one JSON object: rank 1 printed nothing
    assert payload["out"] == str(two / "ckpt") and payload["metrics"]["steps"] == 30
    assert sorted(p.name for p in two.iterdir()) == ["ckpt", "loss.jsonl"]
    assert sorted(p.name for p in (two / "ckpt").iterdir()) == ["checkpoint.json", "model.safetensors"]
    ddp, single = load_checkpoint(two / "ckpt"), load_checkpoint(runs["one"] / "ckpt")
    assert ddp.meta["command"].startswith("torchrun --nproc_per_node=2 -m transformer_core train")
    assert list(ddp.model.state_dict()) == list(single.model.state_dict())  # no `module.` prefix
    batch = reversal_batch(single.tokenizer, ["attention", "abc", "reverse"], torch.device("cpu"))
    with torch.no_grad():
        expected, got = (c.model(batch.src, batch.tgt_in) for c in (single, ddp))
    torch.testing.assert_close(got, expected, atol=LOGITS_ATOL, rtol=0)
    accuracy = single.meta["metrics"]["token_accuracy"]
    assert ddp.meta["metrics"]["token_accuracy"] == pytest.approx(accuracy, abs=0.01)


def test_a_global_batch_that_does_not_divide_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    # what every torchrun rank sees; the check comes before any process group is made
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    args = [a if a != "16" else "15" for a in TINY_RUN]  # --batch-size 15
    assert main([*args, "--out", str(tmp_path / "never")]) == 2
    err = capsys.readouterr().err
    assert "global batch of 15 does not divide among 2 processes" in err and "[1, 3, 5, 15]" in err
    assert not (tmp_path / "never").exists()


# ---------------------------------------------------------------- without processes


@pytest.fixture
def reversal() -> ReversalTask:
    return ReversalTask(reversal_tokenizer(), 1, 9, random_positions=32)


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_shards_cover_the_global_batch_exactly_once(reversal: ReversalTask, world_size: int) -> None:
    whole = reversal.batch(12, torch.Generator().manual_seed(7), torch.device("cpu"))
    shards = [
        ShardedTask(reversal, rank, world_size).batch(
            12, torch.Generator().manual_seed(7), torch.device("cpu")
        )
        for rank in range(world_size)
    ]
    for i, part in enumerate(whole.inputs):
        assert torch.equal(torch.cat([s.inputs[i] for s in shards]), part)  # W x (12/W, T) -> (12, T)
    assert torch.equal(torch.cat([s.targets for s in shards]), whole.targets)
    for shard in shards:  # random positions (T,) are shared by every row: each shard keeps them
        assert shard.options.keys() == whole.options.keys()
        assert all(torch.equal(shard.options[k], whole.options[k]) for k in whole.options)
    assert sum(s.scale for s in shards) / world_size == pytest.approx(1.0)


def test_shard_losses_and_gradients_average_to_the_global_batch(reversal: ReversalTask, make_seq2seq) -> None:
    """What DDP computes (the mean over ranks of each shard's scaled loss and gradient) is the
    loss and gradient of the whole batch, though shards hold different numbers of targets."""
    model = make_seq2seq(vocab_size=len(reversal.tokenizer), max_len=32)
    whole = reversal.batch(8, torch.Generator().manual_seed(3), torch.device("cpu"))
    expected, _ = reversal.loss(model, whole)
    expected_grads = torch.autograd.grad(expected, list(model.parameters()))
    total, grads = 0.0, [torch.zeros_like(p) for p in model.parameters()]
    for rank in range(2):
        task = ShardedTask(reversal, rank, 2)
        shard = shard_batch(whole, rank, 2)
        assert shard.scale != 1.0  # the shards hold different numbers of non-PAD targets
        loss, _ = task.loss(model, shard)
        total += float(loss.detach()) / 2
        for g, dg in zip(grads, torch.autograd.grad(loss, list(model.parameters())), strict=True):
            g += dg / 2
    assert total == pytest.approx(float(expected.detach()), rel=1e-6)
    for got, want in zip(grads, expected_grads, strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)


def test_global_batch_must_divide_by_the_world_size(reversal: ReversalTask) -> None:
    check_global_batch(12, World(0, 0, 4))
    with pytest.raises(ConfigError, match="global batch of 10 does not divide among 4 processes"):
        check_global_batch(10, World(0, 0, 4))
    with pytest.raises(ConfigError, match="batch_size"):
        ShardedTask(reversal, 0, 4).batch(10, torch.Generator(), torch.device("cpu"))


def test_world_comes_from_torchrun_environment() -> None:
    assert world_from_env({}) == World(0, 0, 1) and World().is_main and not World().distributed
    world = world_from_env({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"})
    assert world == World(3, 1, 4) and world.distributed and not world.is_main
    with pytest.raises(ConfigError, match="RANK=4 outside WORLD_SIZE=4"):
        world_from_env({"RANK": "4", "LOCAL_RANK": "0", "WORLD_SIZE": "4"})
    with pytest.raises(ConfigError, match="torchrun environment"):
        world_from_env({"WORLD_SIZE": "2"})


def test_one_process_is_left_as_it_is(reversal: ReversalTask, make_seq2seq) -> None:
    model = make_seq2seq(vocab_size=len(reversal.tokenizer), max_len=32)
    assert distribute(model, reversal, World()) == (model, reversal)
    events = [StepEvent(1, 1, 2.5, 1e-3, 100.0, 0.1), DoneEvent(1, {}, False, 0.2)]
    assert list(main_rank_events(iter(events), World())) == events


def test_only_rank_zero_evaluates(reversal: ReversalTask, make_seq2seq) -> None:
    small = ReversalTask(reversal_tokenizer(), eval_lengths=(3,), eval_samples=4)
    model = make_seq2seq(vocab_size=len(small.tokenizer), max_len=32)
    assert ShardedTask(small, 1, 2).evaluate(model) == {}
    assert ShardedTask(small, 0, 2).evaluate(model) == small.evaluate(model)
