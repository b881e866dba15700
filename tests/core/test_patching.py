"""Activation patching per head: the per-call HeadPatch swap, the sweep's invariants, the
induction heads it finds on gpt-induction, a reversal model, input errors and the CLI contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.config import HeadPatch, InferenceOptions
from transformer_core.errors import ConfigError, InputError
from transformer_core.interp.patching import (
    LOGIT_DIFF,
    LOSS,
    Contrast,
    activation_patching,
    head_outputs,
    patch_each_head,
    patching_run,
)
from transformer_core.io.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
CLEAN, CORRUPT = "abcdefghijabcdefghij", "abcdefghijklmnopqrst"  # a repeated segment vs none


@pytest.fixture(scope="module")
def induction():
    return load_checkpoint("gpt-induction")


def test_patching_each_head_with_its_own_corrupted_value_changes_nothing(induction):
    run = patching_run(induction.model, induction.tokenizer, Contrast(CLEAN, CORRUPT))
    with torch.no_grad():
        corrupted = float(run.metric(induction.model(*run.corrupted)))
    heads = patch_each_head(
        induction.model, run.corrupted, head_outputs(induction.model, run.corrupted), run.metric
    )
    np.testing.assert_allclose(heads["self"], corrupted, atol=1e-5)


def test_clean_equal_to_corrupted_gives_the_clean_metric_for_every_head(induction):
    result = activation_patching(induction.model, induction.tokenizer, CLEAN, CLEAN)
    assert result.metric == LOSS and result.clean == pytest.approx(result.corrupted, abs=1e-6)
    np.testing.assert_allclose(result.heads["self"], result.clean, atol=1e-5)


def test_patching_every_head_of_the_last_layer_writes_the_clean_layer_output(induction):
    """Attention-only: the last block adds exactly its heads (+ b_O) to the stream, so with all of
    them patched the logits are lm_head(final_norm(corrupted stream before it + clean block output))."""
    model, n = induction.model, induction.config.n_layers
    run = patching_run(model, induction.tokenizer, Contrast(CLEAN, CORRUPT))
    clean, corrupted = AttentionCapture(), AttentionCapture()
    with torch.no_grad():
        model(*run.clean, capture=clean)
        model(*run.corrupted, capture=corrupted)
        values = {k: v for k, v in head_outputs(model, run.clean).items() if k[1] == n - 1}
        patched = model(*run.corrupted, options=InferenceOptions(head_patch=HeadPatch(values)))
        clean_write = clean.residuals[f"self.{n - 1}.resid_post"] - clean.residuals[f"self.{n - 1}.resid_pre"]
        expected = model.lm_head(
            model.final_norm(corrupted.residuals[f"self.{n - 1}.resid_pre"] + clean_write)
        )
    assert len(values) == induction.config.n_heads
    torch.testing.assert_close(patched, expected, atol=1e-5, rtol=0)
    assert (patched - model(*run.corrupted)).abs().max() > 0.1  # the patch did something


def test_induction_heads_recover_the_most_on_a_repeated_segment(induction):
    loss = activation_patching(induction.model, induction.tokenizer, CLEAN, CORRUPT)
    assert loss.clean < loss.corrupted - 1.0  # the repeat makes the second half predictable
    ranked = np.argsort(loss.heads["self"], axis=None)[:3]  # lowest clean-answer loss = most recovery
    assert {divmod(int(i), 4) for i in ranked} == {(1, 0), (1, 1), (1, 3)}  # the induction detector's heads
    diff = activation_patching(induction.model, induction.tokenizer, CLEAN[:-1], CORRUPT[:-1], "j", "s")
    assert diff.metric == LOGIT_DIFF and diff.clean > 2.0 > diff.corrupted
    assert np.unravel_index(diff.heads["self"].argmax(), (2, 4)) == (1, 1)


def test_reversal_patches_every_kind_and_layer_zero_decoder_self_is_inert():
    ckpt = load_checkpoint("reverse-rope")
    result = activation_patching(ckpt.model, ckpt.tokenizer, "abcdef", "abcdeg")
    assert list(result.heads) == ["encoder_self", "decoder_self", "cross"]
    assert all(v.shape == (ckpt.config.n_layers, ckpt.config.n_heads) for v in result.heads.values())
    assert result.clean < 0.01 < 1.0 < result.corrupted
    # the decoder's first self-attention reads only the (shared) clean reversal: identical in both runs
    np.testing.assert_allclose(result.heads["decoder_self"][0], result.corrupted, atol=1e-5)
    assert result.heads["cross"].min() < result.corrupted - 1.0  # some cross head carries the changed letter
    same = activation_patching(ckpt.model, ckpt.tokenizer, "abcdef", "abcdef", "f", "g")
    assert same.metric == LOGIT_DIFF and same.clean > 0
    for values in same.heads.values():
        np.testing.assert_allclose(values, same.clean, atol=1e-4)


def test_input_errors_name_the_problem(induction):
    model, tok = induction.model, induction.tokenizer
    with pytest.raises(InputError, match="equal length"):
        activation_patching(model, tok, "abc", "ab")
    with pytest.raises(InputError, match=r"outside the vocabulary: \['1', 'A'\]"):
        activation_patching(model, tok, "abc", "A1c")
    with pytest.raises(InputError, match="both"):
        activation_patching(model, tok, "abc", "abd", answer="a")
    with pytest.raises(InputError, match="one character"):
        activation_patching(model, tok, "abc", "abd", answer="ab", wrong="c")
    with pytest.raises(InputError, match="non-empty"):
        activation_patching(model, tok, "", "")


def test_head_patch_is_validated_and_checked_against_the_layer(make_gpt):
    with pytest.raises(ConfigError, match="triple"):
        HeadPatch({("mlp", 0, 0): torch.zeros(3, 8)})
    with pytest.raises(ConfigError, match="d_head"):
        HeadPatch({("self", 0, 0): torch.zeros(8)})
    gpt = make_gpt()
    bad = InferenceOptions(head_patch=HeadPatch({("self", 0, 1): torch.zeros(1, 5, 8)}))
    with pytest.raises(ConfigError, match=r"needs \(1, 4, 8\)"):
        gpt(torch.ones(1, 4, dtype=torch.long), options=bad)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "transformer_core", "patch", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_cli_json_contract_for_a_gpt_and_a_reversal_model(induction):
    done = _cli("gpt-induction", "--clean", CLEAN, "--corrupt", CORRUPT, "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert set(payload) == {"metric", "clean", "corrupted", "heads"} and payload["metric"] == "loss"
    expected = activation_patching(induction.model, induction.tokenizer, CLEAN, CORRUPT)
    np.testing.assert_allclose(payload["heads"], expected.heads["self"], atol=1e-5)
    assert payload["clean"] == pytest.approx(expected.clean, abs=1e-5)
    done = _cli(
        "reverse-rope", "--clean", "abc", "--corrupt", "abd", "--answer", "c", "--wrong", "d", "--json"
    )
    payload = json.loads(done.stdout)
    assert payload["metric"] == "logit_diff" and list(payload["kinds"]) == [
        "encoder_self",
        "decoder_self",
        "cross",
    ]
    assert payload["heads"] == payload["kinds"]["encoder_self"] and np.shape(payload["kinds"]["cross"]) == (
        2,
        4,
    )
    table = _cli("gpt-induction", "--clean", "abcab", "--corrupt", "abcde").stdout
    assert "clean" in table and "self layer 1" in table


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["gpt-nope", "--clean", "ab", "--corrupt", "ab"], "unknown checkpoint"),
        (["gpt-induction", "--clean", "abc", "--corrupt", "ab"], "equal length"),
        (["gpt-induction", "--clean", "ab?", "--corrupt", "abc"], "outside the vocabulary"),
        (["gpt-induction", "--clean", "abc", "--corrupt", "abd", "--answer", "a"], "both"),
    ],
)
def test_cli_errors_are_one_clear_line(args, message):
    done = _cli(*args, "--json")
    assert done.returncode == 2 and message in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
