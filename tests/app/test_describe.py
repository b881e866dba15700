"""The sentence a chart's description gives for an attention map: the detector's pattern that
holds most of the weight, with its share, and the strongest cell."""

from __future__ import annotations

import numpy as np

from attention_lab.charts.describe import attention_sentence, grid_sentence


def test_a_mirror_cross_attention_is_named_as_the_reversal() -> None:
    keys = [*"abc", "<eos>"]
    queries = ["<sos>", *"cba"]
    w = np.zeros((4, 4))
    w[0, 2] = w[1, 1] = w[2, 0] = 1.0  # output t reads source n-1-t (n = 3 letters)
    w[3, 3] = 1.0
    said = attention_sentence(w, queries, keys, "cross")
    assert said.startswith("output letters look at the mirror-image input letters (100% of the weight)")
    assert "the strongest weight, 1.000, goes from query 0 '<sos>' to key 2 'c'" in said


def test_self_attention_patterns_and_a_spread_head() -> None:
    tokens = list("abcd")
    previous = np.eye(4, k=-1)
    previous[0, 0] = 1.0
    assert attention_sentence(previous, tokens, tokens, "self").startswith(
        "each token looks at the one before it (100% of the weight)"
    )
    six = list("abcdef")
    uniform = np.tril(np.ones((6, 6)))
    uniform /= uniform.sum(-1, keepdims=True)  # row i: 1/(i+1) on each key; itself, the first: 41% each
    said = attention_sentence(uniform, six, six, "self")
    assert said.startswith("the weight is spread") and "1.000, goes from query 0 'a' to key 0 'a'" in said


def test_a_grid_names_its_size_and_its_clearest_head() -> None:
    tokens = list("abcd")
    diagonal = np.eye(4)
    uniform = np.full((4, 4), 0.25)
    grid = np.stack([np.stack([uniform, uniform]), np.stack([uniform, diagonal])])  # (2, 2, 4, 4)
    said = grid_sentence(grid, tokens, tokens, "encoder_self")
    assert said.startswith(
        "2 layers by 2 heads, each a map of 4 queries by 4 keys. The clearest, layer 1 head 1:"
    )
    assert "each token looks at itself (100% of the weight)" in said


def test_a_grid_scores_every_head_at_once_as_each_alone() -> None:
    """Every head's pattern scores at once are each head's own, bit for bit, and the clearest head
    is the first with the best share, layer by layer (ties, empty rows and NaN maps included)."""
    from attention_lab.charts.describe import pattern_scores, pattern_shares

    rng = np.random.default_rng(0)
    for kind, (tq, tk) in [("self", (7, 7)), ("cross", (6, 5)), ("encoder_self", (5, 5))] * 4:
        keys = [*"abcdefg"[: tk - 1], "<eos>"]
        grid = rng.dirichlet(np.full(tk, 0.3), size=(3, 4, tq))  # (L, H, Tq, Tk)
        grid[0, 1] = grid[2, 3]  # a tie: the earlier head is named
        grid[1, 0, :2] = 0.0  # rows without weight
        grid[1, 2] = np.nan  # a map with nothing in it
        batched = pattern_scores(grid, keys, kind)
        for layer in range(3):
            for head in range(4):
                alone = pattern_scores(grid[layer, head], keys, kind)
                assert all(np.array_equal(batched[n][layer, head], alone[n], equal_nan=True) for n in alone)
        best = {
            (layer, head): max(pattern_shares(grid[layer, head], keys, kind).values(), default=0.0)
            for layer in range(3)
            for head in range(4)
        }
        layer, head = max(best, key=best.__getitem__)
        queries = [f"q{i}" for i in range(tq)]
        assert f"The clearest, layer {layer} head {head}:" in grid_sentence(grid, queries, keys, kind)


def test_the_clearest_head_is_the_first_of_equals_and_an_empty_grid_names_the_first() -> None:
    tokens = list("abcd")
    uniform, diagonal = np.full((4, 4), 0.25), np.eye(4)
    grid = np.stack([np.stack([uniform, diagonal]), np.stack([diagonal, uniform])])  # (2, 2, 4, 4): a tie
    assert "The clearest, layer 0 head 1: each token looks at itself" in grid_sentence(
        grid, tokens, tokens, "encoder_self"
    )
    empty = np.full((2, 3, 4, 4), np.nan)  # nothing in any map: no pattern holds any weight
    assert "The clearest, layer 0 head 0: the weight is spread" in grid_sentence(
        empty, tokens, tokens, "encoder_self"
    )
