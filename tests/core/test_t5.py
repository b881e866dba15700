"""T5's relative position bias: the bucket function against Hugging Face's, the learned bias
shared across layers, its direction in encoder and decoder, and capture = fast path."""

from __future__ import annotations

import pytest
import torch

from tests.support.optional import installed
from transformer_core.capture import AttentionCapture
from transformer_core.config import ModelConfig
from transformer_core.errors import ConfigError
from transformer_core.models import GPT, Seq2Seq
from transformer_core.positional import (
    POSITION_SCHEMES,
    T5Positions,
    t5_max_distance,
    t5_relative_position_bucket,
)


@pytest.fixture(scope="session")
def transformers(tmp_path_factory):
    """The transformers module, pip-installed from requirements-import.txt if missing."""
    return installed("transformers", "requirements-import.txt", tmp_path_factory)


@pytest.mark.parametrize("bidirectional", [True, False], ids=["encoder", "decoder"])
@pytest.mark.parametrize(("num_buckets", "max_distance"), [(32, 128), (32, 32), (16, 64), (8, 20)])
def test_buckets_equal_hugging_face_on_every_pair_up_to_128(
    transformers, bidirectional: bool, num_buckets: int, max_distance: int
) -> None:
    reference = transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket
    positions = torch.arange(129)
    relative = positions[None, :] - positions[:, None]  # (129, 129): j - i for every (i, j)
    ours = t5_relative_position_bucket(relative, bidirectional, num_buckets, max_distance)
    theirs = reference(
        relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert torch.equal(ours, theirs)
    assert int(ours.min()) == 0 and int(ours.max()) == num_buckets - 1


def test_bucket_layout_exact_near_log_far_and_directional() -> None:
    offsets = torch.tensor([-200, -128, -20, -8, -7, -1, 0, 1, 7, 8, 200])
    both = t5_relative_position_bucket(offsets, bidirectional=True).tolist()
    # 16 buckets per side: distances 0..7 exact, then log-spaced, 128 and beyond share 15
    assert both == [15, 15, 10, 8, 7, 1, 0, 17, 23, 24, 31]  # 20 back: 8 + floor(8 ln 2.5 / ln 16)
    causal = t5_relative_position_bucket(offsets, bidirectional=False).tolist()
    # 32 buckets looking back: 0..15 exact; keys after the query share bucket 0 (masked anyway)
    assert causal == [31, 31, 17, 8, 7, 1, 0, 0, 0, 0, 0]


def test_max_distance_is_scaled_to_the_context() -> None:
    assert t5_max_distance(128) == 128 and t5_max_distance(1024) == 128  # T5's own
    assert t5_max_distance(32) == 32 and t5_max_distance(8) == 32  # every bucket reachable, range non-empty
    with pytest.raises(ConfigError, match="max_distance"):
        t5_relative_position_bucket(torch.arange(4), False, num_buckets=32, max_distance=16)


def test_one_bias_per_stack_is_shared_by_every_layer(tiny_config) -> None:
    """Raffel et al.: one learned scalar per (bucket, head), shared across the layers of a stack."""
    model = Seq2Seq(tiny_config("seq2seq", "t5", n_layers=3, n_heads=4, d_model=16))
    biases = {k: v.shape for k, v in model.state_dict().items() if "relative_attention_bias" in k}
    assert biases == {
        "src_positions.relative_attention_bias.weight": (32, 4),
        "tgt_positions.relative_attention_bias.weight": (32, 4),
    }
    assert not model.src_positions.causal and model.tgt_positions.causal
    with torch.no_grad():
        model.src_positions.relative_attention_bias.weight.normal_()
        model.tgt_positions.relative_attention_bias.weight.normal_()
    capture = AttentionCapture()
    src, tgt = torch.randint(4, 16, (2, 7)), torch.randint(4, 16, (2, 5))
    with torch.no_grad():
        model(src, tgt, capture=capture)
    for kind in ("encoder_self", "decoder_self"):
        records = [r for r in capture.records if r.kind == kind]
        assert len(records) == 3
        for r in records[1:]:
            assert torch.equal(r.position_bias, records[0].position_bias)
    encoder_bias = capture["encoder_self.0"].position_bias  # (H, Ts, Ts)
    assert not torch.allclose(encoder_bias[:, 1, 2], encoder_bias[:, 2, 1])  # after != before
    assert capture["cross.0"].position_bias is None  # T5 adds no bias to cross-attention


def test_scores_hold_the_bias_before_the_mask(make_gpt) -> None:
    """Like ALiBi, the captured pre-softmax scores include the bias: scores - q k^T / sqrt(d)."""
    model = make_gpt("t5")
    with torch.no_grad():
        model.positions.relative_attention_bias.weight.normal_()
    capture = AttentionCapture()
    with torch.no_grad():
        model(torch.randint(4, 16, (1, 9)), capture=capture)
    record = capture["self.1"]
    plain = record.q @ record.k.transpose(-2, -1) * record.scale
    torch.testing.assert_close(record.scores - plain, record.position_bias.expand_as(plain))
    pos = torch.arange(9)
    expected = model.positions.relative_attention_bias(model.positions.buckets(pos, pos)).permute(2, 0, 1)
    torch.testing.assert_close(record.position_bias, expected)


@pytest.mark.parametrize("arch", ["gpt", "seq2seq"])
def test_capture_equals_fast_path_with_t5(tiny_config, arch: str) -> None:
    torch.manual_seed(0)
    config = tiny_config(arch, "t5")
    model = (GPT(config) if arch == "gpt" else Seq2Seq(config)).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
        inputs = (
            (torch.randint(4, 16, (2, 12)),)
            if arch == "gpt"
            else (
                torch.tensor([[5, 6, 7, 8, 9, 2, 0, 0], [5, 6, 7, 8, 9, 10, 11, 2]]),
                torch.tensor([[1, 9, 8, 7, 0], [1, 11, 10, 9, 8]]),
            )
        )
        fast = model(*inputs)
        captured = model(*inputs, capture=AttentionCapture())
    torch.testing.assert_close(captured, fast, atol=1e-5, rtol=1e-5)


def test_t5_extrapolates_past_max_len(make_gpt) -> None:
    model = make_gpt("t5", max_len=16)
    assert POSITION_SCHEMES["t5"] is T5Positions and T5Positions.extrapolates
    with torch.no_grad():
        logits = model(torch.randint(4, 16, (1, 40)))  # far distances share the last bucket
    assert torch.isfinite(logits).all()


def test_t5_configs_need_no_extra_fields() -> None:
    config = ModelConfig(arch="seq2seq", positions="t5", d_model=16, n_heads=2, max_len=32)
    assert ModelConfig.from_dict(config.to_dict()) == config
