"""Issue 24: the ablation sweep measures a GPT on its own kind of data, held out from training.

Before, the sweep's probe batch was 4 built-in texts plus 4 random repeated segments (58% of
the predicted tokens, loss 5.72 nats): it named gpt-sinusoidal's head 2.0 as the one the
model needs most, while on held-out text 2.0 ranks 9th and 0.0 matters most.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from transformer_core.interp.importance import ablation_sweep, gpt_probe_batch
from transformer_core.interp.report import (
    heads_json,
    report_detectors,
    report_importance,
    report_induction_probe,
)
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.data import default_corpus, split_ids
from transformer_core.io.held_out import corpus_windows, held_out_data


def top(delta: np.ndarray, k: int) -> list[tuple[int, int]]:
    """The k (layer, head) pairs whose ablation raises the loss most, largest first."""
    order = np.argsort(-delta.ravel(), kind="stable")[:k]
    return [divmod(int(i), delta.shape[1]) for i in order]


def test_the_sweeps_top_head_on_gpt_sinusoidal_is_among_the_top_3_on_other_held_out_windows() -> None:
    ckpt = load_checkpoint("gpt-sinusoidal")
    imp = report_importance(ckpt)
    assert "held-out windows" in imp.data and "default corpus" in imp.data
    assert imp.base_loss < 1.5  # its own kind of text (5.72 nats on the old probe batch)
    other = corpus_windows(ckpt, windows=32, seed=7)  # windows the report did not use
    assert other is not None
    _, _, delta, _ = ablation_sweep(ckpt.model, gpt_probe_batch(other.sequences), exact_match=False)
    assert top(imp.delta_loss["self"], 1)[0] in top(delta["self"], 3)
    assert top(imp.delta_loss["self"], 1) == [(0, 0)]  # the finding: 0.0 matters most
    assert top(imp.delta_loss["self"], 1)[0] != (2, 0)  # not the random strings' favourite


def test_held_out_windows_come_from_the_corpus_tail_training_never_saw() -> None:
    ckpt = load_checkpoint("gpt-sinusoidal")
    held = held_out_data(ckpt)
    assert held is not None and len(held.sequences) == 16
    assert {len(s) for s in held.sequences} == {ckpt.config.max_len + 1}  # block_size inputs + 1 target
    ids = torch.tensor(ckpt.tokenizer.encode(default_corpus()))
    train, val = split_ids(ids)
    tail = ckpt.tokenizer.decode(val.tolist())
    for seq in held.sequences:
        assert ckpt.tokenizer.decode(list(seq)) in tail
    assert held == held_out_data(ckpt)  # seeded: the same windows every time


def test_an_induction_model_is_measured_on_fresh_rows_of_its_task_and_needs_its_induction_heads() -> None:
    ckpt = load_checkpoint("gpt-induction")
    imp = report_importance(ckpt)
    assert "fresh rows of its training task" in imp.data
    induction = report_detectors(ckpt).scores["self"]["induction"]
    assert top(imp.delta_loss["self"], 1)[0] == top(induction, 1)[0] == (1, 1)
    assert report_induction_probe(ckpt) is None  # its data already is repeated segments


def test_the_induction_probe_is_reported_apart_and_labelled() -> None:
    ckpt = load_checkpoint("gpt-sinusoidal")
    probe = report_induction_probe(ckpt)
    assert probe is not None and probe.data.startswith("an induction probe")
    assert probe.base_loss > 4 * report_importance(ckpt).base_loss  # random strings are not its data
    payload = heads_json(ckpt.name, report_detectors(ckpt), report_importance(ckpt), induction_probe=probe)
    assert payload["ablation_data"].startswith("16 held-out windows")
    assert payload["induction_probe_data"] == probe.data
    row = next(h for h in payload["heads"] if (h["layer"], h["head"]) == (2, 0))
    assert row["induction_probe"]["delta_loss"] == pytest.approx(probe.delta_loss["self"][2, 0], abs=1e-6)


def test_a_missing_corpus_falls_back_to_the_built_in_texts_and_says_so(tmp_path) -> None:
    ckpt = load_checkpoint("gpt-rope")
    args = {**ckpt.meta["train_args"], "corpus": "corpus.txt"}  # a run's upload, not on this machine
    moved = dataclasses.replace(ckpt, meta={**ckpt.meta, "train_args": args}, folder=tmp_path)
    assert held_out_data(moved) is None
    assert "records no training data" in report_importance(moved).data
    (tmp_path / "corpus.txt").write_text("abc def ghi " * 400, encoding="utf-8")
    held = held_out_data(moved)
    assert held is not None and "its corpus corpus.txt" in held.description
    assert {len(s) for s in held.sequences} == {ckpt.config.max_len + 1}
