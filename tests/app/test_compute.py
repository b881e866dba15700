"""attention_lab.models.compute: one cache for every page, keyed by the weights and the arguments."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import streamlit as st
import torch

from attention_lab.models import compute
from transformer_core.config import InferenceOptions
from transformer_core.io.checkpoint import Checkpoint, load_checkpoint

CALLS: list[tuple] = []


def next_token(ckpt: Checkpoint, text: str, options: InferenceOptions) -> int:
    """A pure function of (weights, args) that records each real call."""
    CALLS.append((ckpt.name, text, options))
    ids = torch.tensor([ckpt.tokenizer.encode(text)])
    with torch.no_grad():
        return int(ckpt.model(ids, options=options)[0, -1].argmax())


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> dict[str, Checkpoint]:
    """Three names: two hold the same weights (one shipped, one a run id), one other weights."""
    st.cache_data.clear()
    CALLS.clear()
    base = load_checkpoint("gpt-sinusoidal")
    other = load_checkpoint("gpt-rope")
    found = {"gpt-sinusoidal": base, "run-" + "ab" * 8: replace(base, name="copy"), "gpt-rope": other}
    monkeypatch.setattr(compute, "load_model", found.__getitem__)
    return found


def test_a_result_is_computed_once_per_weights_and_arguments(models: dict[str, Checkpoint]) -> None:
    opts = InferenceOptions()
    first = compute.run_cached(next_token, "gpt-sinusoidal", "def f", opts)
    assert compute.run_cached(next_token, "gpt-sinusoidal", "def f", InferenceOptions()) == first
    assert len(CALLS) == 1
    assert compute.run_cached(next_token, "run-" + "ab" * 8, "def f", opts) == first  # same weights
    assert len(CALLS) == 1
    compute.run_cached(next_token, "gpt-rope", "def f", opts)  # other weights
    compute.run_cached(next_token, "gpt-sinusoidal", "def g", opts)  # other text
    assert len(CALLS) == 3


@pytest.mark.parametrize(
    "changed",
    [
        {"scale_scores": False},
        {"sliding_window": 2},
        {"causal": False},
        {"positions": False},
        {"padding_mask": False},
        {"ablate": frozenset({("self", 0, 1)})},
    ],
)
def test_every_inference_option_keys_the_cache(models: dict[str, Checkpoint], changed: dict) -> None:
    """The old tuple copy of the options dropped scale_scores and sliding_window."""
    plain = InferenceOptions()
    other = InferenceOptions(**changed)
    assert compute.canonical(plain) != compute.canonical(other)
    compute.run_cached(next_token, "gpt-sinusoidal", "abc", plain)
    compute.run_cached(next_token, "gpt-sinusoidal", "abc", other)
    assert [c[2] for c in CALLS] == [plain, other]


def test_the_key_ignores_the_order_of_a_set() -> None:
    a = InferenceOptions(ablate=[("self", 1, 2), ("self", 0, 3), ("cross", 0, 0)])
    b = InferenceOptions(ablate=[("cross", 0, 0), ("self", 0, 3), ("self", 1, 2)])
    assert compute.canonical(a) == compute.canonical(b)
    assert compute.canonical((1, "x", [2.5])) != compute.canonical((1, "x", [2.5, 0]))
    assert compute.canonical(True) != compute.canonical(1)  # bool is not int here
    with pytest.raises(TypeError, match="cannot key"):
        compute.canonical(torch.zeros(3))


def test_weights_without_a_stored_checksum_are_hashed_from_the_tensors() -> None:
    ckpt = load_checkpoint("reverse-rope")
    stored = compute.weights_sha256(ckpt)
    assert stored == ckpt.meta["weights_sha256"]
    bare = replace(ckpt, meta={k: v for k, v in ckpt.meta.items() if k != "weights_sha256"})
    computed = compute.weights_sha256(bare)
    assert computed.startswith("tensors:") and computed == compute.weights_sha256(copy.deepcopy(bare))
    changed = copy.deepcopy(bare)
    with torch.no_grad():
        next(changed.model.parameters())[0].add_(1.0)
    assert compute.weights_sha256(changed) != computed


def test_a_shared_cache_is_one_entry_however_its_arguments_are_passed() -> None:
    calls: list[tuple[int, int]] = []

    def area(width: int, height: int = 2) -> list[int]:
        calls.append((width, height))
        return [width * height]

    cached = compute.shared_cache(area)
    first = cached(3, 4)
    assert cached(3, height=4) is first and cached(height=4, width=3) is first and calls == [(3, 4)]
    two = cached(3)
    assert two == [6] and cached(3, 2) is two and cached(width=3, height=2) is two
    assert calls == [(3, 4), (3, 2)] and cached.__name__ == "area"
    with pytest.raises(TypeError, match="takes 2 positional arguments"):
        cached(3, 4, 5)
    with pytest.raises(TypeError, match="depth"):
        cached(3, depth=1)

    def spread(*sizes: int) -> int:
        return sum(sizes)

    def options(**named: int) -> int:
        return len(named)

    for fn in (spread, options):
        with pytest.raises(TypeError, match=f"{fn.__name__} must take its arguments by name"):
            compute.shared_cache(fn)
