"""Attention maths against worked numbers, and MultiHeadAttention against torch's."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from transformer_core.attention import (
    AttentionSite,
    MultiHeadAttention,
    attention_scores,
    masked_softmax,
    scaled_dot_product_attention,
)
from transformer_core.capture import AttentionCapture
from transformer_core.masks import causal_mask, combine_masks, padding_mask, sliding_window_mask

# ------------------------------------------------------------------ worked numbers


def test_four_item_query_key_value_example_unscaled():
    # one query against four one-dimensional keys; the scores are plain q.k (scale 1)
    q = torch.tensor([[1.5]])
    k = torch.tensor([[0.0], [1.0], [2.0], [3.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.5]])

    scores = attention_scores(q, k, scale=1.0)
    torch.testing.assert_close(scores, torch.tensor([[0.0, 1.5, 3.0, 4.5]]))

    context, weights = scaled_dot_product_attention(q, k, v, scale=1.0)
    torch.testing.assert_close(weights, torch.tensor([[0.0087, 0.0388, 0.1738, 0.7788]]), atol=5e-5, rtol=0)
    torch.testing.assert_close(context, torch.tensor([[0.5718, 0.6019]]), atol=5e-5, rtol=0)
    assert weights.sum().item() == pytest.approx(1.0, abs=1e-6)


def test_scale_defaults_to_inverse_sqrt_dk():
    q = torch.tensor([[1.0, 2.0, 0.5, -1.0]])
    k = torch.tensor([[0.5, 1.0, -2.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
    raw = q @ k.T
    torch.testing.assert_close(attention_scores(q, k), raw / 2.0)  # sqrt(4) = 2
    torch.testing.assert_close(attention_scores(q, k, scale=1.0), raw)
    bias = torch.tensor([[0.25, -1.0]])
    torch.testing.assert_close(attention_scores(q, k, bias=bias), raw / 2.0 + bias)


def _padded_scores():
    scores = torch.tensor([[2.0, 1.0, 0.0, 0.0], [0.3, 1.4, 0.2, 0.0]])
    valid = torch.tensor([2, 3])
    mask = torch.arange(4)[None, :] < valid[:, None]
    return scores, mask


def test_masked_softmax_rows_and_exact_zeros():
    scores, mask = _padded_scores()
    weights = masked_softmax(scores, mask)
    expected = torch.tensor([[0.7311, 0.2689, 0.0, 0.0], [0.2037, 0.6120, 0.1843, 0.0]])
    torch.testing.assert_close(weights, expected, atol=5e-5, rtol=0)
    # masked entries are exactly zero, not merely small
    assert torch.all(weights[~mask] == 0.0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2))
    # without the mask the padding steals weight (the reason for masking)
    plain = masked_softmax(scores)
    torch.testing.assert_close(
        plain,
        torch.tensor([[0.6103, 0.2245, 0.0826, 0.0826], [0.1770, 0.5317, 0.1602, 0.1311]]),
        atol=5e-5,
        rtol=0,
    )


def test_masked_softmax_of_scaled_scores():
    scores, mask = _padded_scores()
    weights = masked_softmax(scores / math.sqrt(4), mask)
    expected = torch.tensor([[0.6225, 0.3775, 0.0, 0.0], [0.2714, 0.4704, 0.2582, 0.0]])
    torch.testing.assert_close(weights, expected, atol=5e-5, rtol=0)
    assert torch.all(weights[~mask] == 0.0)


def test_fully_masked_row_gives_zeros_not_nan():
    scores = torch.randn(2, 3)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    weights = masked_softmax(scores, mask)
    assert not torch.isnan(weights).any()
    assert torch.all(weights[1] == 0.0)
    assert weights[0].sum().item() == pytest.approx(1.0, abs=1e-6)


BATCH_Q = torch.tensor([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, 0.0]]])
BATCH_K = torch.tensor(
    [
        [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.5]],
        [[1.0, 1.0], [0.0, 1.0], [1.0, 0.0], [5.0, 5.0]],
    ]
)
BATCH_V = torch.tensor(
    [
        [[10.0, 0.0], [0.0, 10.0], [5.0, 5.0], [2.0, 8.0]],
        [[1.0, 1.0], [0.0, 2.0], [2.0, 0.0], [9.0, 9.0]],
    ]
)


def test_batched_scaled_dot_product_attention_worked_example():
    out, weights = scaled_dot_product_attention(BATCH_Q, BATCH_K, BATCH_V)
    assert weights.shape == (2, 2, 4) and out.shape == (2, 2, 2)
    expected_weights = torch.tensor(
        [
            [[0.3349, 0.1651, 0.3349, 0.1651], [0.1543, 0.3130, 0.3130, 0.2198]],
            [[0.0035, 0.0017, 0.0017, 0.9931], [0.0515, 0.0254, 0.0515, 0.8716]],
        ]
    )
    expected_out = torch.tensor([[[5.3534, 4.6466], [3.5475, 6.4525]], [[8.9449, 8.9449], [7.9987, 7.9464]]])
    torch.testing.assert_close(weights, expected_weights, atol=5e-5, rtol=0)
    torch.testing.assert_close(out, expected_out, atol=5e-5, rtol=0)


def test_contract_mask_true_means_may_attend():
    mask = torch.tensor([[True, True, False, False], [True, False, True, True]])
    out, weights = scaled_dot_product_attention(BATCH_Q, BATCH_K, BATCH_V, mask)
    expanded = mask.expand_as(weights)
    assert torch.all(weights[~expanded] == 0.0)
    assert torch.all(weights[expanded] > 0.0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 2))
    torch.testing.assert_close(out, weights @ BATCH_V)
    # an all-True mask is the same as no mask
    full, full_w = scaled_dot_product_attention(BATCH_Q, BATCH_K, BATCH_V, torch.ones(4, dtype=torch.bool))
    ref, ref_w = scaled_dot_product_attention(BATCH_Q, BATCH_K, BATCH_V)
    torch.testing.assert_close(full, ref)
    torch.testing.assert_close(full_w, ref_w)


SPLIT_X = torch.tensor(
    [[[2.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [0.0, 0.0, 1.0, 1.0]]]
)
WEIGHTS1 = torch.tensor(
    [
        [0.7346, 0.1786, 0.0434, 0.0434],
        [0.4022, 0.4022, 0.0978, 0.0978],
        [0.2500, 0.2500, 0.2500, 0.2500],
        [0.2500, 0.2500, 0.2500, 0.2500],
    ]
)
WEIGHTS2 = torch.tensor(
    [
        [0.2500, 0.2500, 0.2500, 0.2500],
        [0.2500, 0.2500, 0.2500, 0.2500],
        [0.0434, 0.0434, 0.7346, 0.1786],
        [0.0978, 0.0978, 0.4022, 0.4022],
    ]
)
SPLIT_OUTPUT = torch.tensor(
    [
        [
            [1.6477, 0.1786, 0.7500, 0.2500],
            [1.2066, 0.4022, 0.7500, 0.2500],
            [0.7500, 0.2500, 1.6477, 0.1786],
            [0.7500, 0.2500, 1.2066, 0.4022],
        ]
    ]
)


def test_multi_head_split_worked_example():
    head1, weights1 = scaled_dot_product_attention(SPLIT_X[..., :2], SPLIT_X[..., :2], SPLIT_X[..., :2])
    head2, weights2 = scaled_dot_product_attention(SPLIT_X[..., 2:], SPLIT_X[..., 2:], SPLIT_X[..., 2:])
    torch.testing.assert_close(weights1[0], WEIGHTS1, atol=5e-5, rtol=0)
    torch.testing.assert_close(weights2[0], WEIGHTS2, atol=5e-5, rtol=0)
    torch.testing.assert_close(torch.cat([head1, head2], -1), SPLIT_OUTPUT, atol=5e-5, rtol=0)


def test_single_head_self_attention_worked_example():
    out, weights = scaled_dot_product_attention(SPLIT_X, SPLIT_X, SPLIT_X)
    expected_w = torch.tensor(
        [
            [0.6103, 0.2245, 0.0826, 0.0826],
            [0.3655, 0.3655, 0.1345, 0.1345],
            [0.0826, 0.0826, 0.6103, 0.2245],
            [0.1345, 0.1345, 0.3655, 0.3655],
        ]
    )
    expected_out = torch.tensor(
        [
            [1.4451, 0.2245, 0.2478, 0.0826],
            [1.0966, 0.3655, 0.4034, 0.1345],
            [0.2478, 0.0826, 1.4451, 0.2245],
            [0.4034, 0.1345, 1.0966, 0.3655],
        ]
    )
    torch.testing.assert_close(weights[0], expected_w, atol=5e-5, rtol=0)
    torch.testing.assert_close(out[0], expected_out, atol=5e-5, rtol=0)


@pytest.mark.parametrize("captured", [False, True])
def test_multi_head_attention_with_identity_projections_splits_heads_like_the_example(captured):
    # identity W_Q, W_K, W_V and W_O: head h reads dimensions [2h, 2h+2) and the output is
    # the concatenation of the heads, i.e. the worked split example
    mha = MultiHeadAttention(4, 2)
    with torch.no_grad():
        mha.in_proj.weight.copy_(torch.cat([torch.eye(4)] * 3))
        mha.in_proj.bias.zero_()
        mha.out_proj.weight.copy_(torch.eye(4))
        mha.out_proj.bias.zero_()
    capture = AttentionCapture() if captured else None
    with torch.no_grad():
        out = mha(SPLIT_X, AttentionSite("self", 0, capture=capture))
    torch.testing.assert_close(out, SPLIT_OUTPUT, atol=5e-5, rtol=0)
    if captured:
        weights = capture["self.0"].weights[0]  # (H, T, T)
        torch.testing.assert_close(weights[0], WEIGHTS1, atol=5e-5, rtol=0)
        torch.testing.assert_close(weights[1], WEIGHTS2, atol=5e-5, rtol=0)


# ------------------------------------------------------------------ masks


def test_causal_mask_square_and_with_cache_offset():
    assert torch.equal(causal_mask(3), torch.tril(torch.ones(3, 3, dtype=torch.bool)))
    # two new queries after three cached keys: they are positions 3 and 4 of 5
    expected = torch.tensor([[True, True, True, True, False], [True, True, True, True, True]])
    assert torch.equal(causal_mask(2, 5), expected)


def test_padding_and_window_masks():
    tokens = torch.tensor([[5, 6, 0], [7, 0, 0]])
    pm = padding_mask(tokens, 0)
    assert pm.shape == (2, 1, 1, 3)
    assert pm[:, 0, 0].tolist() == [[True, True, False], [True, False, False]]
    window = sliding_window_mask(4, window=2)
    expected = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]], dtype=torch.bool)
    assert torch.equal(window, expected)
    both = combine_masks(causal_mask(4), None, window)
    assert torch.equal(both, torch.tril(expected))
    assert combine_masks(None, None) is None


# ------------------------------------------------------------------ against torch.nn.MultiheadAttention

D_MODEL, N_HEADS = 16, 4


def _pair(seed: int = 0) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    torch.manual_seed(seed)
    ours = MultiHeadAttention(D_MODEL, N_HEADS).eval()
    theirs = nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True).eval()
    with torch.no_grad():
        # random biases too, so a wrong bias layout cannot hide behind torch's zero init
        ours.in_proj.weight.normal_(0, 0.4)
        ours.in_proj.bias.normal_(0, 0.4)
        ours.out_proj.bias.normal_(0, 0.4)
        theirs.in_proj_weight.copy_(ours.in_proj.weight)
        theirs.in_proj_bias.copy_(ours.in_proj.bias)
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.copy_(ours.out_proj.bias)
    return ours, theirs


# lengths of the keys in each batch row (right padding); None = no padding mask
CASES = [
    ("self", None, False),
    ("self", [5, 3, 1], False),
    ("self", None, True),
    ("self", [5, 3, 1], True),
    ("cross", None, False),
    ("cross", [7, 4, 2], False),
]


@pytest.mark.parametrize("captured", [False, True], ids=["fused", "capture"])
@pytest.mark.parametrize(("kind", "lengths", "causal"), CASES)
def test_multi_head_attention_matches_torch(kind, lengths, causal, captured):
    ours, theirs = _pair()
    B, Tq = 3, 5
    Tk = Tq if kind == "self" else 7
    x = torch.randn(B, Tq, D_MODEL)
    memory = None if kind == "self" else torch.randn(B, Tk, D_MODEL)
    kv = x if memory is None else memory

    allowed = None
    key_padding = None
    if lengths is not None:
        valid = torch.arange(Tk)[None, :] < torch.tensor(lengths)[:, None]  # (B, Tk)
        allowed = valid[:, None, None, :]
        key_padding = ~valid  # torch: True = ignore
    torch_attn_mask = None
    if causal:
        allowed = combine_masks(allowed, causal_mask(Tq))
        torch_attn_mask = ~causal_mask(Tq)  # torch: True = not allowed

    capture = AttentionCapture() if captured else None
    site = AttentionSite(kind, 0, mask=allowed, capture=capture)
    with torch.no_grad():
        got = ours(x, site, memory=memory)
        want, want_w = theirs(
            x,
            kv,
            kv,
            key_padding_mask=key_padding,
            attn_mask=torch_attn_mask,
            need_weights=True,
            average_attn_weights=False,
        )
    assert got.shape == (B, Tq, D_MODEL)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    if captured:
        record = capture[f"{kind}.0"]
        assert record.weights.shape == (B, N_HEADS, Tq, Tk)
        torch.testing.assert_close(record.weights, want_w, atol=1e-5, rtol=1e-5)


def test_fused_causal_hint_matches_explicit_mask():
    ours, theirs = _pair(seed=3)
    x = torch.randn(2, 6, D_MODEL)
    with torch.no_grad():
        hinted = ours(x, AttentionSite("self", 0, mask=causal_mask(6), is_causal=True))
        explicit = ours(x, AttentionSite("self", 0, mask=causal_mask(6), capture=AttentionCapture()))
        want, _ = theirs(x, x, x, attn_mask=~causal_mask(6), need_weights=False)
    torch.testing.assert_close(hinted, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(explicit, want, atol=1e-5, rtol=1e-5)


def test_masking_changes_the_output():
    # guards the comparisons above: a mask that does nothing would still "match"
    ours, _ = _pair()
    x = torch.randn(1, 5, D_MODEL)
    with torch.no_grad():
        free = ours(x, AttentionSite("self", 0))
        causal = ours(x, AttentionSite("self", 0, mask=causal_mask(5)))
    assert (free - causal)[:, :-1].abs().max() > 1e-3
    # the last query sees every key either way
    torch.testing.assert_close(free[:, -1], causal[:, -1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("captured", [False, True], ids=["fused", "capture"])
def test_ablated_head_equals_zeroed_output_projection_columns(captured):
    ours, _ = _pair(seed=5)
    x = torch.randn(2, 5, D_MODEL)
    d_head = D_MODEL // N_HEADS
    capture = AttentionCapture() if captured else None
    with torch.no_grad():
        ablated = ours(x, AttentionSite("self", 0, ablated_heads=(2,), capture=capture))
        intact = ours(x, AttentionSite("self", 0))
        ours.out_proj.weight[:, 2 * d_head : 3 * d_head] = 0.0
        zeroed = ours(x, AttentionSite("self", 0))
    torch.testing.assert_close(ablated, zeroed, atol=1e-6, rtol=1e-6)
    assert (ablated - intact).abs().max() > 1e-3
