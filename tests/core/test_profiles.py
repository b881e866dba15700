"""Heads across a dataset: per-window detector scores and top pairs, stable across halves of the
held-out set, kept beside the shipped GPTs for their weights (recomputed when they no longer
match), and a clear refusal where there is no held-out text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli import cli
from transformer_core.errors import ConfigError
from transformer_core.interp.profiles import (
    PROFILES_FILE,
    TOP_PAIRS,
    head_profiles,
    merge_top,
    profile_heads,
    stored_profiles,
    top_pairs,
)
from transformer_core.io import load_checkpoint
from transformer_core.io.checkpoint import CHECKPOINTS_DIR

GPTS = ["gpt-sinusoidal", "gpt-learned", "gpt-rope", "gpt-alibi", "gpt-t5", "gpt-none", "gpt-induction"]


@pytest.mark.parametrize("name", GPTS)
def test_every_shipped_gpt_keeps_small_profiles_of_its_own_weights(name: str) -> None:
    path = CHECKPOINTS_DIR / name / PROFILES_FILE
    assert path.stat().st_size < 2_000_000
    profiles = stored_profiles(load_checkpoint(name))
    assert profiles is not None and len(profiles.windows) == 64
    assert profiles.scores["previous_token"].shape == (64, 4, 4) if name != "gpt-induction" else (64, 2, 4)
    assert profiles.top.shape[2:] == (TOP_PAIRS, 4)


def test_the_kept_profiles_are_what_a_fresh_run_computes() -> None:
    ckpt = load_checkpoint("gpt-induction")
    kept, fresh = stored_profiles(ckpt), profile_heads(ckpt)
    assert kept is not None and kept.windows == fresh.windows
    for score, values in fresh.scores.items():
        np.testing.assert_allclose(kept.scores[score], values, atol=1e-4)
    np.testing.assert_allclose(kept.top, fresh.top, atol=1e-4)


HALVES = (slice(0, None, 2), slice(1, None, 2))  # even and odd windows


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho: the correlation of the ranks (no ties among these medians)."""
    return float(np.corrcoef(np.argsort(np.argsort(a)), np.argsort(np.argsort(b)))[0, 1])


@pytest.mark.parametrize("name", ["gpt-sinusoidal", "gpt-rope", "gpt-induction"])
def test_median_scores_are_stable_across_two_halves_of_the_windows(name: str) -> None:
    profiles = stored_profiles(load_checkpoint(name))
    for score in ("previous_token", "diagonal", "entropy", "mean_distance"):
        even, odd = (np.nanmedian(profiles.scores[score][part], axis=0).ravel() for part in HALVES)
        assert rank_correlation(even, odd) > 0.9, score


def test_top_pairs_are_the_largest_weights_with_their_place() -> None:
    weights = np.zeros((3, 1, 2, 4, 4))
    weights[2, 0, 1, 3, 1] = 0.9
    weights[0, 0, 1, 2, 2] = 0.8
    weights[1, 0, 1, 0, 0] = 1.0  # query 0 is left out
    top = top_pairs(weights, top=2)
    assert top.shape == (1, 2, 2, 4)
    assert top[0, 1].tolist() == [[2, 3, 1, 0.9], [0, 2, 2, 0.8]]


def test_stale_or_damaged_profiles_are_computed_again(tmp_path: Path) -> None:
    folder = tmp_path / "my-gpt"
    shutil.copytree(CHECKPOINTS_DIR / "gpt-induction", folder)
    data = json.loads((folder / PROFILES_FILE).read_text())
    data["checkpoint_sha"] = "0" * 64  # other weights
    (folder / PROFILES_FILE).write_text(json.dumps(data))
    ckpt = load_checkpoint(str(folder))
    assert stored_profiles(ckpt) is None and head_profiles(ckpt).checkpoint_sha == ckpt.meta["weights_sha256"]
    (folder / PROFILES_FILE).write_text("{not json")
    assert stored_profiles(ckpt) is None


def test_a_missing_corpus_or_a_reversal_model_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere"
    shutil.copytree(CHECKPOINTS_DIR / "gpt-rope", folder, ignore=shutil.ignore_patterns(PROFILES_FILE))
    meta = json.loads((folder / "checkpoint.json").read_text())
    meta["train_args"]["corpus"] = str(tmp_path / "gone.txt")
    (folder / "checkpoint.json").write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="training data is not on this machine"):
        head_profiles(load_checkpoint(str(folder)))
    with pytest.raises(ConfigError, match="GPT"):
        profile_heads(load_checkpoint("reverse-rope"))


def test_the_profile_command_prints_scores_per_window() -> None:
    out = json.loads(cli("profile", "gpt-induction", "--windows", "4", "--json").stdout)
    assert np.asarray(out["scores"]["induction"]).shape == (4, 2, 4) and len(out["windows"]) == 4
    assert np.asarray(out["top"]).shape == (2, 4, TOP_PAIRS, 4)


def test_windows_merged_one_at_a_time_give_the_whole_sets_top_pairs_ties_included() -> None:
    weights = np.random.default_rng(0).random((6, 2, 3, 8, 8)).round(2)  # (W, L, H, T, T), many ties
    merged = None
    for w in range(len(weights)):
        found = top_pairs(weights[w : w + 1])
        found[..., 0] = w
        merged = found if merged is None else merge_top(merged, found)
    np.testing.assert_array_equal(merged, top_pairs(weights))
    assert (merged[..., 1] > 0).all()  # query 0 left out
