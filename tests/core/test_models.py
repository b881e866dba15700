"""Models: fast path vs capture path, causality, permutation, ablation, blocks, config."""

from __future__ import annotations

import copy
import typing

import pytest
import torch
from torch import nn

from transformer_core.attention import AttentionSite
from transformer_core.capture import AttentionCapture
from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions, ModelConfig
from transformer_core.errors import ConfigError, InputError
from transformer_core.io.tokenizer import EOS_ID, PAD_ID, SOS_ID
from transformer_core.layers import EncoderBlock, FeedForward, RMSNorm
from transformer_core.models import GPT, Seq2Seq, build_model
from transformer_core.positional import POSITION_SCHEMES, apply_rope, sinusoidal_positional_encoding

ATOL = 1e-5


def test_all_six_position_schemes_are_offered():
    # the parametrisations below run over POSITION_SCHEMES: make sure the six of the
    # contract are in it (a new scheme joins them by its registry line)
    assert {"sinusoidal", "learned", "rope", "alibi", "t5", "none"} <= set(POSITION_SCHEMES)


def test_config_choices_are_the_registry():
    # one list: the config's Literal (what validate_fields checks) is built from the registry
    hint = typing.get_type_hints(ModelConfig)["positions"]
    assert typing.get_args(hint) == tuple(POSITION_SCHEMES)
    for name in POSITION_SCHEMES:
        assert ModelConfig(positions=name).positions == name


@pytest.mark.parametrize("arch", ["gpt", "seq2seq"])
@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_models_hold_the_registry_class_under_the_checkpoint_names(tiny_config, arch, positions):
    # shipped safetensors load strictly by name: only a learned table is a weight, and it
    # keeps its names (positions.table.weight; src_/tgt_positions.table.weight)
    model = build_model(tiny_config(arch, positions))
    scheme = POSITION_SCHEMES[positions]
    holders = ["positions"] if arch == "gpt" else ["src_positions", "tgt_positions"]
    for holder in holders:
        assert type(getattr(model, holder)) is scheme
    position_keys = sorted(k for k in model.state_dict() if "positions" in k)
    weights = {"learned": "table.weight", "t5": "relative_attention_bias.weight"}  # the learned schemes
    expected = [f"{h}.{weights[positions]}" for h in holders] if positions in weights else []
    assert position_keys == sorted(expected)


def _embedded(model: nn.Module, run, options: InferenceOptions = DEFAULT_OPTIONS) -> torch.Tensor:
    """What the first stack receives after the embeddings (the dropout's input)."""
    seen: list[torch.Tensor] = []
    handle = model.drop.register_forward_hook(lambda module, args, out: seen.append(args[0]))
    with torch.no_grad():
        run(options)
    handle.remove()
    return seen[0]


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_position_codes_are_what_gpt_adds_to_its_embeddings(make_gpt, positions):
    model = make_gpt(positions)
    idx = torch.tensor([[4, 5, 6, 7, 8, 9]])
    codes = model.position_codes(6)
    added = _embedded(model, lambda o: model(idx, options=o)) - _embedded(
        model, lambda o: model(idx, options=o), InferenceOptions(positions=False)
    )
    if POSITION_SCHEMES[positions].absolute:
        assert codes is not None and codes.shape == (6, 16) and not codes.requires_grad
        torch.testing.assert_close(added[0], codes)
        assert codes.abs().max() > 1e-3
    else:
        assert codes is None
        assert torch.equal(added, torch.zeros_like(added))


def test_position_codes_read_the_tables(make_gpt, make_seq2seq):
    learned = make_gpt("learned", max_len=8)
    assert torch.equal(learned.position_codes(8), learned.positions.table.weight)
    with pytest.raises(InputError, match="8"):
        learned.position_codes(9)  # no row past the trained table
    s2s = make_seq2seq("learned")
    torch.testing.assert_close(s2s.position_codes(16), s2s.src_positions.table.weight)  # the source side
    assert not torch.equal(s2s.position_codes(16), s2s.tgt_positions.table.weight)
    sinusoidal = make_gpt("sinusoidal", max_len=8)
    torch.testing.assert_close(sinusoidal.position_codes(12), sinusoidal_positional_encoding(12, 16))
    src = torch.tensor([[4, 5, 6, EOS_ID]])
    s2s_sin = make_seq2seq("sinusoidal")
    added = _embedded(s2s_sin, lambda o: s2s_sin.encode(src, options=o)) - _embedded(
        s2s_sin, lambda o: s2s_sin.encode(src, options=o), InferenceOptions(positions=False)
    )
    torch.testing.assert_close(added[0], s2s_sin.position_codes(4))


def _gpt_batch() -> torch.Tensor:
    # two sequences of different length, the shorter one PAD-padded on the right
    return torch.tensor([[4, 5, 6, 7, 8, 9, 10], [11, 12, 13, 14, PAD_ID, PAD_ID, PAD_ID]])


def _seq2seq_batch() -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.tensor([[4, 5, 6, 7, 8, EOS_ID], [9, 10, 11, EOS_ID, PAD_ID, PAD_ID]])
    tgt = torch.tensor([[SOS_ID, 8, 7, 6, 5, 4], [SOS_ID, 11, 10, 9, PAD_ID, PAD_ID]])
    return src, tgt


def _check_record(record, expect_bias: bool) -> None:
    """Properties every captured attention record must have."""
    B, H, Tq, Tk = record.weights.shape
    d_head = record.q.shape[-1]
    assert record.q.shape == (B, H, Tq, d_head)
    assert record.k.shape == record.v.shape == (B, H, Tk, d_head)
    assert record.scores.shape == (B, H, Tq, Tk)
    full = record.full_mask
    assert full.shape == record.weights.shape and full.dtype == torch.bool
    # rows are distributions, masked entries exactly zero
    torch.testing.assert_close(record.weights.sum(-1), torch.ones(B, H, Tq), atol=1e-5, rtol=0)
    assert torch.all(record.weights[~full] == 0.0)
    assert torch.all(record.weights >= 0.0)
    # scores = q k^T * scale + bias (before the mask)
    expected = record.q @ record.k.transpose(-2, -1) * record.scale
    if expect_bias:
        assert record.position_bias is not None
        assert record.position_bias.shape == (H, Tq, Tk)
        expected = expected + record.position_bias
    else:
        assert record.position_bias is None
    torch.testing.assert_close(record.scores, expected, atol=1e-5, rtol=1e-5)
    assert record.scale == pytest.approx(d_head**-0.5)
    # the weights are the masked softmax of those scores
    masked = record.scores.masked_fill(~full, float("-inf"))
    torch.testing.assert_close(record.weights, torch.softmax(masked, -1), atol=1e-6, rtol=1e-5)


# ------------------------------------------------------------------ fast path == capture path


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_last_only_logits_are_the_last_row_of_the_full_ones(make_gpt, positions):
    model = make_gpt(positions)
    idx = _gpt_batch()
    with torch.no_grad():
        full, last = model(idx), model(idx, last_only=True, capture=AttentionCapture())
    assert last.shape == (2, 1, model.config.vocab_size)
    torch.testing.assert_close(last[:, 0], full[:, -1], atol=ATOL, rtol=ATOL)


LAST_ONLY_OPTIONS = {
    "default": InferenceOptions(),
    "not causal": InferenceOptions(causal=False),
    "sliding window": InferenceOptions(sliding_window=3),
    "last layer's head 1 ablated": InferenceOptions(ablate=frozenset({("self", 1, 1)})),
    "no positions": InferenceOptions(positions=False),
}


@pytest.mark.parametrize("options", list(LAST_ONLY_OPTIONS))
@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_last_only_runs_the_last_block_for_the_last_query_alone(make_gpt, positions, options):
    # what sampling past the window pays per token: the last block reads every position's keys
    # and values but computes queries, attention and feed-forward for the last position only
    model, opts = make_gpt(positions), LAST_ONLY_OPTIONS[options]
    idx = _gpt_batch()
    rows: list[int] = []
    hook = model.blocks[-1].ffn.register_forward_hook(lambda m, a, out: rows.append(a[0].size(1)))
    with torch.no_grad():
        full, last = model(idx, options=opts), model(idx, options=opts, last_only=True)
    hook.remove()
    assert rows == [7, 1]
    assert last.shape == (2, 1, model.config.vocab_size)
    torch.testing.assert_close(last[:, 0], full[:, -1], atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_last_only_after_a_cached_prefix_leaves_the_cache_whole(make_gpt, positions):
    # a prompt fed in two parts, the second with last_only: the logits are the full pass's last
    # row, and every layer's cache holds every position, so the next cached step agrees too
    model = make_gpt(positions)
    idx = _gpt_batch()
    with torch.no_grad():
        full = model(idx)
        cache = model.new_cache()
        model(idx[:, :3], cache=cache)
        last = model(idx[:, 3:6], cache=cache, last_only=True)
        assert [layer.length for layer in cache.layers] == [6, 6]
        step = model(idx[:, 6:], cache=cache, last_only=True)
    torch.testing.assert_close(last[:, 0], full[:, 5], atol=ATOL, rtol=ATOL)
    torch.testing.assert_close(step[:, 0], full[:, 6], atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_gpt_fast_and_capture_paths_agree(make_gpt, positions):
    model = make_gpt(positions)
    idx = _gpt_batch()
    capture = AttentionCapture()
    with torch.no_grad():
        fast = model(idx)
        slow = model(idx, capture=capture)
    assert fast.shape == (2, 7, model.config.vocab_size)
    torch.testing.assert_close(fast, slow, atol=ATOL, rtol=ATOL)
    assert capture.names == ["self.0", "self.1"]
    assert capture.kinds() == ["self"]
    causal = torch.tril(torch.ones(7, 7, dtype=torch.bool))
    for record in capture.records:
        assert record.weights.shape == (2, 2, 7, 7)
        _check_record(record, expect_bias=POSITION_SCHEMES[positions].biases)
        assert torch.equal(record.full_mask[0, 0], causal)
        if POSITION_SCHEMES[positions].rotates:
            cos, sin = model.positions.rotation(torch.arange(7))
            torch.testing.assert_close(record.q, apply_rope(record.q_raw, cos, sin))
            torch.testing.assert_close(record.k, apply_rope(record.k_raw, cos, sin))
            assert not torch.allclose(record.q, record.q_raw)
            assert not torch.allclose(record.k, record.k_raw)
        else:
            assert torch.equal(record.q, record.q_raw) and torch.equal(record.k, record.k_raw)
    assert capture.weights("self").shape == (2, 2, 7, 7)  # (L, H, T, T)


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_gpt_training_path_runs_the_fused_causal_kernel(make_gpt, monkeypatch, positions):
    # the speed of training rests on this: no capture -> torch's fused kernel, told
    # is_causal instead of given a mask whenever there is no score bias to merge
    calls: list[dict] = []
    fused = torch.nn.functional.scaled_dot_product_attention

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return fused(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    model = make_gpt(positions).train()
    model(_gpt_batch()).sum().backward()
    assert len(calls) == model.config.n_layers
    biased = POSITION_SCHEMES[positions].biases
    for kwargs in calls:
        assert kwargs.get("is_causal", False) is not biased
        assert (kwargs.get("attn_mask") is None) is not biased
        if biased:  # one float mask a pass, (1, H, T, T): a 3-D one sends the CPU kernel to its maths path
            mask = kwargs["attn_mask"]
            hidden = ~torch.ones(mask.shape[-2:], dtype=torch.bool).tril()  # the causal mask, merged in
            assert mask.dim() == 4 and mask.dtype == torch.float32
            assert torch.isneginf(mask[:, :, hidden]).all() and torch.isfinite(mask[:, :, ~hidden]).all()
    assert not biased or len({kw["attn_mask"].data_ptr() for kw in calls}) == 1  # merged once
    calls.clear()
    with torch.no_grad():
        model.eval()(_gpt_batch(), options=InferenceOptions(sliding_window=2))
    assert calls and all(not kw.get("is_causal") and kw["attn_mask"] is not None for kw in calls)


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
@pytest.mark.parametrize(
    "options",
    [
        InferenceOptions(),
        InferenceOptions(causal=False),
        InferenceOptions(sliding_window=2),
        InferenceOptions(positions=False, scale_scores=False),
    ],
    ids=["default", "no-causal", "window", "no-positions-no-scale"],
)
def test_gpt_paths_agree_under_options(make_gpt, positions, options):
    model = make_gpt(positions)
    idx = _gpt_batch()
    capture = AttentionCapture()
    with torch.no_grad():
        fast = model(idx, options=options)
        slow = model(idx, options=options, capture=capture)
    torch.testing.assert_close(fast, slow, atol=ATOL, rtol=ATOL)
    for record in capture.records:
        expected_scale = record.q.shape[-1] ** -0.5 if options.scale_scores else 1.0
        assert record.scale == pytest.approx(expected_scale)
        if options.causal is False and options.sliding_window is None:
            assert record.mask is None
        if options.sliding_window:
            full = record.full_mask[0, 0]
            i, j = torch.meshgrid(torch.arange(7), torch.arange(7), indexing="ij")
            assert torch.equal(full, (j <= i) & (i - j < options.sliding_window))


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_seq2seq_fast_and_capture_paths_agree(make_seq2seq, positions):
    model = make_seq2seq(positions)
    src, tgt = _seq2seq_batch()
    capture = AttentionCapture()
    with torch.no_grad():
        fast = model(src, tgt)
        slow = model(src, tgt, capture=capture)
        memory_fast = model.encode(src)
        memory_slow = model.encode(src, capture=AttentionCapture())
    assert fast.shape == (2, 6, model.config.vocab_size)
    torch.testing.assert_close(fast, slow, atol=ATOL, rtol=ATOL)
    torch.testing.assert_close(memory_fast, memory_slow, atol=ATOL, rtol=ATOL)

    assert capture.kinds() == ["encoder_self", "decoder_self", "cross"]
    assert sorted(capture.names) == sorted(
        ["encoder_self.0", "encoder_self.1", "decoder_self.0", "decoder_self.1", "cross.0", "cross.1"]
    )
    relative_bias = POSITION_SCHEMES[positions].biases
    src_valid = src != PAD_ID
    tgt_valid = tgt != PAD_ID
    for layer in range(2):
        enc = capture[f"encoder_self.{layer}"]
        dec = capture[f"decoder_self.{layer}"]
        cross = capture[f"cross.{layer}"]
        assert enc.weights.shape == (2, 2, 6, 6)
        assert dec.weights.shape == (2, 2, 6, 6)
        assert cross.weights.shape == (2, 2, 6, 6)
        _check_record(enc, expect_bias=relative_bias)
        _check_record(dec, expect_bias=relative_bias)
        _check_record(cross, expect_bias=False)  # ALiBi/RoPE act in self-attention only
        # padding keys get exactly zero weight; the decoder is causal on top
        src_pad = ~src_valid[:, None, None, :].expand(2, 2, 6, 6)
        tgt_pad = ~tgt_valid[:, None, None, :].expand(2, 2, 6, 6)
        assert torch.all(enc.weights[src_pad] == 0.0)
        assert torch.all(cross.weights[src_pad] == 0.0)
        assert torch.all(dec.weights[tgt_pad] == 0.0)
        assert torch.all(dec.weights[..., torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)] == 0.0)
        assert torch.all(cross.weights[1, :, :, 4:] == 0.0) and torch.all(cross.weights[1, :, :, :4] > 0)
    assert capture.weights("cross", batch_index=1).shape == (2, 2, 6, 6)


def test_seq2seq_cross_attention_shapes_with_different_lengths(make_seq2seq):
    model = make_seq2seq("rope")
    src = torch.tensor([[4, 5, 6, 7, 8, 9, 10, EOS_ID]])
    tgt = torch.tensor([[SOS_ID, 10, 9]])
    capture = AttentionCapture()
    with torch.no_grad():
        fast = model(src, tgt)
        slow = model(src, tgt, capture=capture)
    torch.testing.assert_close(fast, slow, atol=ATOL, rtol=ATOL)
    assert capture["encoder_self.1"].weights.shape == (1, 2, 8, 8)
    assert capture["decoder_self.1"].weights.shape == (1, 2, 3, 3)
    assert capture["cross.1"].weights.shape == (1, 2, 3, 8)
    assert capture.weights("cross").shape == (2, 2, 3, 8)
    with pytest.raises(KeyError):
        capture["self.0"]


def test_padding_mask_option_lets_queries_see_padding(make_seq2seq):
    model = make_seq2seq("sinusoidal")
    src, tgt = _seq2seq_batch()
    options = InferenceOptions(padding_mask=False)
    capture = AttentionCapture()
    with torch.no_grad():
        fast = model(src, tgt, options=options)
        slow = model(src, tgt, options=options, capture=capture)
        masked = model(src, tgt)
    torch.testing.assert_close(fast, slow, atol=ATOL, rtol=ATOL)
    assert torch.all(capture["cross.0"].weights[1, :, :, 4:] > 0.0)
    assert (fast[1] - masked[1]).abs().max() > 1e-4
    # the unpadded first row is the same either way
    torch.testing.assert_close(fast[0], masked[0], atol=ATOL, rtol=ATOL)


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_relative_schemes_score_only_offsets(make_gpt, positions):
    # a run of one repeated token: every q_raw and k_raw of layer 0 is the same vector, so
    # the scores can differ between (i, j) pairs only through the positional scheme.
    # Relative schemes (RoPE, ALiBi) make them depend on i - j alone (a Toeplitz matrix);
    # absolute schemes do not; without positions every score is equal.
    model = make_gpt(positions)
    scheme = POSITION_SCHEMES[positions]
    capture = AttentionCapture()
    with torch.no_grad():
        model(torch.full((1, 8), 7), options=InferenceOptions(causal=False), capture=capture)
    scores = capture["self.0"].scores[0]  # (H, T, T)
    diagonals = [torch.diagonal(scores, offset, dim1=-2, dim2=-1) for offset in range(-7, 8)]
    spread = max(float((d - d.mean(-1, keepdim=True)).abs().max()) for d in diagonals)
    if scheme.absolute:
        assert spread > 1e-3
    elif scheme.rotates or scheme.biases:
        assert spread < 1e-4
        # offsets 0 and 2 back differ (T5's causal buckets give every key after the query bucket 0)
        assert (diagonals[7][:, 0] - diagonals[5][:, 0]).abs().max() > 1e-3
    else:
        torch.testing.assert_close(scores, scores[..., :1, :1].expand_as(scores))


# ------------------------------------------------------------------ causality


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
@pytest.mark.parametrize("captured", [False, True], ids=["fused", "capture"])
def test_gpt_later_tokens_never_change_earlier_logits(make_gpt, positions, captured):
    model = make_gpt(positions)
    a = torch.tensor([[4, 5, 6, 7, 8, 9]])
    b = a.clone()
    b[0, 4] = 12  # change position 4

    def run(x: torch.Tensor, options: InferenceOptions = DEFAULT_OPTIONS) -> torch.Tensor:
        capture = AttentionCapture() if captured else None
        return model(x, options=options, capture=capture)

    with torch.no_grad():
        la, lb = run(a), run(b)
        torch.testing.assert_close(la[:, :4], lb[:, :4], atol=ATOL, rtol=ATOL)
        assert (la[:, 4:] - lb[:, 4:]).abs().max() > 1e-4
        no_causal = InferenceOptions(causal=False)
        na, nb = run(a, no_causal), run(b, no_causal)
        assert (na[:, :4] - nb[:, :4]).abs().max() > 1e-4


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_seq2seq_decoder_is_causal(make_seq2seq, positions):
    model = make_seq2seq(positions)
    src = torch.tensor([[4, 5, 6, 7, EOS_ID]])
    tgt_a = torch.tensor([[SOS_ID, 7, 6, 5, 4]])
    tgt_b = tgt_a.clone()
    tgt_b[0, 3] = 13
    with torch.no_grad():
        la, lb = model(src, tgt_a), model(src, tgt_b)
        torch.testing.assert_close(la[:, :3], lb[:, :3], atol=ATOL, rtol=ATOL)
        assert (la[:, 3:] - lb[:, 3:]).abs().max() > 1e-4
        opts = InferenceOptions(causal=False)
        na, nb = model(src, tgt_a, options=opts), model(src, tgt_b, options=opts)
        assert (na[:, :3] - nb[:, :3]).abs().max() > 1e-4


# ------------------------------------------------------------------ permutation


PERM = torch.tensor([3, 0, 5, 1, 4, 2])
SRC = torch.tensor([[4, 5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15]])


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_encoder_permutation_equivariance_only_without_positions(make_seq2seq, positions):
    model = make_seq2seq(positions)
    with torch.no_grad():
        out = model.encode(SRC)
        out_perm = model.encode(SRC[:, PERM])
    if not POSITION_SCHEMES[positions].carries_position():
        torch.testing.assert_close(out_perm, out[:, PERM], atol=ATOL, rtol=ATOL)
    else:
        assert (out_perm - out[:, PERM]).abs().max() > 1e-3


@pytest.mark.parametrize("positions", list(POSITION_SCHEMES))
def test_dropping_positions_makes_every_scheme_permutation_equivariant(make_seq2seq, positions):
    model = make_seq2seq(positions)
    options = InferenceOptions(positions=False)
    with torch.no_grad():
        out = model.encode(SRC, options=options)
        out_perm = model.encode(SRC[:, PERM], options=options)
        with_positions = model.encode(SRC)
    torch.testing.assert_close(out_perm, out[:, PERM], atol=ATOL, rtol=ATOL)
    if POSITION_SCHEMES[positions].carries_position():
        assert (with_positions - out).abs().max() > 1e-3


# ------------------------------------------------------------------ ablation


def _state_copy(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _assert_state_unchanged(model: nn.Module, before: dict[str, torch.Tensor]) -> None:
    after = model.state_dict()
    assert after.keys() == before.keys()
    for name, tensor in before.items():
        assert torch.equal(after[name], tensor), name


@pytest.mark.parametrize("captured", [False, True], ids=["fused", "capture"])
def test_ablating_one_head_changes_output_and_leaves_weights_alone(make_gpt, captured):
    model = make_gpt("rope")
    idx = torch.tensor([[4, 5, 6, 7, 8, 9]])
    before = _state_copy(model)
    capture = AttentionCapture() if captured else None
    with torch.no_grad():
        base = model(idx)
        ablated = model(idx, options=InferenceOptions(ablate={("self", 0, 1)}), capture=capture)
        # the same effect by editing a copy: zero the columns of W_O that read head 1
        edited = copy.deepcopy(model)
        d_head = model.config.d_head
        edited.blocks[0].self_attn.out_proj.weight[:, d_head : 2 * d_head] = 0.0
        reference = edited(idx)
    assert (ablated - base).abs().max() > 1e-4
    torch.testing.assert_close(ablated, reference, atol=ATOL, rtol=ATOL)
    _assert_state_unchanged(model, before)
    with torch.no_grad():
        torch.testing.assert_close(model(idx), base)  # nothing sticks to the module


@pytest.mark.parametrize("captured", [False, True], ids=["fused", "capture"])
def test_ablating_every_head_of_a_layer_equals_zeroing_their_outputs(make_seq2seq, captured):
    model = make_seq2seq("alibi")
    src, tgt = _seq2seq_batch()
    before = _state_copy(model)
    heads = range(model.config.n_heads)
    options = InferenceOptions(
        ablate={("cross", 1, h) for h in heads} | {("encoder_self", 0, h) for h in heads}
    )
    with torch.no_grad():
        base = model(src, tgt)
        ablated = model(src, tgt, options=options, capture=AttentionCapture() if captured else None)
        edited = copy.deepcopy(model)
        edited.decoder[1].cross_attn.out_proj.weight.zero_()
        edited.encoder[0].self_attn.out_proj.weight.zero_()
        reference = edited(src, tgt)
    assert (ablated - base).abs().max() > 1e-4
    torch.testing.assert_close(ablated, reference, atol=ATOL, rtol=ATOL)
    _assert_state_unchanged(model, before)


def test_ablation_of_another_kind_or_layer_does_not_leak(make_seq2seq):
    model = make_seq2seq("sinusoidal")
    src, tgt = _seq2seq_batch()
    with torch.no_grad():
        base = model.encode(src)
        # decoder heads do not touch the encoder output
        other = model.encode(src, options=InferenceOptions(ablate={("cross", 0, 0), ("decoder_self", 1, 1)}))
        own = model.encode(src, options=InferenceOptions(ablate={("encoder_self", 1, 0)}))
    torch.testing.assert_close(base, other)
    assert (own - base).abs().max() > 1e-4


def test_bad_ablation_triples_are_rejected():
    with pytest.raises(ConfigError, match="ablate"):
        InferenceOptions(ablate={("selff", 0, 1)})
    with pytest.raises(ConfigError, match="ablate"):
        InferenceOptions(ablate={("self", -1, 1)})
    assert InferenceOptions(ablate=[("self", 1, 0), ["cross", 0, 1]]).ablated_heads("self", 1) == [0]


# ------------------------------------------------------------------ layers


def test_rmsnorm_matches_torch():
    torch.manual_seed(0)
    ours = RMSNorm(12, eps=1e-5)
    theirs = nn.RMSNorm(12, eps=1e-5)
    with torch.no_grad():
        ours.weight.normal_()
        theirs.weight.copy_(ours.weight)
    x = torch.randn(3, 5, 12) * 3 + 1
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-5)
    # no centring: a shifted input is not normalised to zero mean (unlike LayerNorm)
    assert ours(torch.full((1, 12), 2.0)).abs().min() > 0.1


@pytest.mark.parametrize("activation", ["relu", "gelu", "swiglu"])
def test_feed_forward_shapes_and_definition(tiny_config, activation):
    config = tiny_config(activation=activation, d_model=16, d_ff=40)
    torch.manual_seed(0)
    ffn = FeedForward(config)
    x = torch.randn(2, 5, 16)
    out = ffn(x)
    assert out.shape == (2, 5, 16)
    assert ffn.w1.weight.shape == (40, 16) and ffn.w2.weight.shape == (16, 40)
    if activation == "swiglu":
        assert ffn.w3 is not None and ffn.w3.weight.shape == (40, 16)
        expected = ffn.w2(torch.nn.functional.silu(ffn.w1(x)) * ffn.w3(x))
    else:
        assert ffn.w3 is None
        act = torch.relu if activation == "relu" else torch.nn.functional.gelu
        expected = ffn.w2(act(ffn.w1(x)))
    torch.testing.assert_close(out, expected)


def test_activations_give_different_networks(tiny_config):
    outs = {}
    x = torch.randn(1, 4, 16)
    for act in ("relu", "gelu"):
        torch.manual_seed(0)
        outs[act] = FeedForward(tiny_config(activation=act))(x)
    assert (outs["relu"] - outs["gelu"]).abs().max() > 1e-4


def test_post_ln_and_pre_ln_models_run_and_differ(make_gpt):
    idx = torch.tensor([[4, 5, 6, 7, 8]])
    pre = make_gpt("sinusoidal", seed=0, norm_position="pre")
    post = make_gpt("sinusoidal", seed=0, norm_position="post")
    assert isinstance(post.final_norm, nn.Identity)
    assert isinstance(pre.final_norm, nn.LayerNorm)
    with torch.no_grad():
        a, b = pre(idx), post(idx)
    assert torch.isfinite(a).all() and torch.isfinite(b).all()
    assert a.shape == b.shape == (1, 5, 16)
    assert (a - b).abs().max() > 1e-3


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_block_residual_order(tiny_config, norm_position):
    torch.manual_seed(0)
    block = EncoderBlock(tiny_config(norm_position=norm_position)).eval()
    x = torch.randn(2, 5, 16) * 4 + 3
    with torch.no_grad():
        out = block(x, AttentionSite("self", 0))
    if norm_position == "post":
        # Post-LN ends in a LayerNorm (gain 1, bias 0 at init): each token is normalised
        torch.testing.assert_close(out.mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)
        torch.testing.assert_close(out.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3, rtol=0)
    else:
        # Pre-LN keeps the residual stream un-normalised
        assert (out.mean(-1) - 0).abs().max() > 0.5


def test_rmsnorm_config_uses_rmsnorm(make_gpt):
    model = make_gpt("none", norm="rmsnorm")
    assert isinstance(model.blocks[0].norm_self, RMSNorm)
    assert isinstance(model.final_norm, RMSNorm)
    with torch.no_grad():
        assert torch.isfinite(model(torch.tensor([[4, 5, 6]]))).all()


# ------------------------------------------------------------------ config and inputs


def test_config_rejects_unknown_scheme_with_field_name():
    with pytest.raises(ConfigError) as err:
        ModelConfig(positions="foo")
    assert str(err.value).startswith("positions")
    assert "foo" in str(err.value)


def test_config_from_dict_names_unknown_field():
    with pytest.raises(ConfigError, match="d_modle"):
        ModelConfig.from_dict({"d_modle": 3})
    good = ModelConfig.from_dict({"d_model": 32, "n_heads": 4})
    assert good.d_model == 32 and good.d_head == 8
    assert ModelConfig.from_dict(good.to_dict()) == good


def test_config_rejects_indivisible_heads_and_bad_values():
    with pytest.raises(ConfigError) as err:
        ModelConfig(d_model=30, n_heads=4)
    assert str(err.value).startswith("d_model")
    with pytest.raises(ConfigError, match="^arch"):
        ModelConfig(arch="rnn")
    with pytest.raises(ConfigError, match="^n_layers"):
        ModelConfig(n_layers=0)
    with pytest.raises(ConfigError, match="^tie_weights"):
        ModelConfig(tie_weights="yes")
    with pytest.raises(ConfigError, match="^dropout"):
        ModelConfig(dropout=1.5)
    with pytest.raises(ConfigError, match="^positions"):
        ModelConfig(d_model=12, n_heads=4, positions="rope")  # d_head 3 cannot be rotated in pairs
    with pytest.raises(ConfigError, match="^sliding_window"):
        InferenceOptions(sliding_window=0)


def test_config_is_frozen():
    config = ModelConfig()
    with pytest.raises(AttributeError):
        config.d_model = 8  # type: ignore[misc]


def test_build_model_and_arch_checks(tiny_config):
    assert isinstance(build_model(tiny_config("gpt")), GPT)
    assert isinstance(build_model(tiny_config("seq2seq")), Seq2Seq)
    with pytest.raises(ConfigError, match="^arch"):
        GPT(tiny_config("seq2seq"))
    with pytest.raises(ConfigError, match="^arch"):
        Seq2Seq(tiny_config("gpt"))


def test_tied_weights(make_gpt):
    tied = make_gpt("none")
    assert tied.lm_head.weight is tied.tok_emb.weight
    untied = make_gpt("none", tie_weights=False)
    assert untied.lm_head.weight is not untied.tok_emb.weight


def test_learned_positions_stop_at_max_len(make_gpt, make_seq2seq):
    model = make_gpt("learned", max_len=8)
    with torch.no_grad():
        assert model(torch.full((1, 8), 5)).shape == (1, 8, 16)
        with pytest.raises(InputError, match="8"):
            model(torch.full((1, 9), 5))
        s2s = make_seq2seq("learned", max_len=8)
        with pytest.raises(InputError):
            s2s.encode(torch.full((1, 9), 5))


@pytest.mark.parametrize("positions", [name for name, cls in POSITION_SCHEMES.items() if cls.extrapolates])
def test_formula_schemes_run_past_max_len(make_gpt, positions):
    model = make_gpt(positions, max_len=8)
    idx = torch.randint(4, 16, (1, 12))
    with torch.no_grad():
        fast = model(idx)
        slow = model(idx, capture=AttentionCapture())
    assert torch.isfinite(fast).all()
    torch.testing.assert_close(fast, slow, atol=ATOL, rtol=ATOL)
    if POSITION_SCHEMES[positions].absolute:
        # positions past the table are computed, not clipped: position 11 differs from 7
        a = model(torch.full((1, 12), 5))
        assert (a[0, 11] - a[0, 7]).abs().max() > 1e-4


def test_bad_token_ids_are_rejected(make_gpt, make_seq2seq):
    model = make_gpt("none")
    with pytest.raises(InputError):
        model(torch.tensor([[1, 2, 16]]))  # vocab is 16
    with pytest.raises(InputError):
        model(torch.tensor([[-1, 2]]))
    with pytest.raises(InputError):
        model(torch.zeros((1, 0), dtype=torch.long))
    with pytest.raises(InputError):
        make_seq2seq("none").encode(torch.tensor([4, 5, 6]))  # missing batch axis


@pytest.mark.parametrize("positions", ["sinusoidal", "rope", "alibi", "t5"])
def test_a_sliding_window_fused_equals_captured_and_a_wide_one_equals_none(positions: str) -> None:
    """The fused kernel with the banded mask gives the explicit path's logits; W >= T is no
    window at all; and the KV cache's single-query steps keep the band."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=32,
                            positions=positions)).eval()  # fmt: skip
    ids = torch.randint(4, 20, (2, 12))
    banded = InferenceOptions(sliding_window=3)
    with torch.no_grad():
        fused = model(ids, options=banded)
        captured = model(ids, options=banded, capture=AttentionCapture())
        wide = model(ids, options=InferenceOptions(sliding_window=12))
        plain = model(ids)
        cache = model.new_cache()
        model(ids[:, :11], options=banded, cache=cache)
        stepped = model(ids[:, 11:], options=banded, cache=cache)
    assert torch.allclose(fused, captured, atol=1e-5)
    assert torch.allclose(wide, plain, atol=1e-6) and not torch.allclose(fused, plain, atol=1e-3)
    assert torch.allclose(stepped[:, -1], fused[:, -1], atol=1e-5)
