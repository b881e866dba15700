"""The recurrent baselines (`gru`, `bahdanau`): the GRU cell against torch's, the encoder's
padding, additive attention, capture, config, and the checkpoint / trainer / trace machinery."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from transformer_core.attention import masked_softmax
from transformer_core.capture import AttentionCapture
from transformer_core.config import InferenceOptions, ModelConfig
from transformer_core.errors import ConfigError
from transformer_core.interp.trace import trace_seq2seq
from transformer_core.io.checkpoint import load_checkpoint, save_checkpoint
from transformer_core.io.data import reversal_tokenizer
from transformer_core.models import build_model
from transformer_core.recurrent import GRUCell, RecurrentSeq2Seq, additive_scores, gru_step
from transformer_core.train import REPORT_LENGTHS, TrainConfig, Trainer, evaluate_reversal, prepare_run
from transformer_core.train.trainer import DoneEvent
from transformer_core.vocab import EOS_ID, PAD_ID, SOS_ID

KINDS = ("gru", "bahdanau")


def recurrent(kind: str, d_model: int = 16, vocab_size: int = 16, seed: int = 0) -> RecurrentSeq2Seq:
    torch.manual_seed(seed)
    config = ModelConfig(
        arch="seq2seq",
        model=kind,
        vocab_size=vocab_size,
        d_model=d_model,
        n_heads=1,
        n_layers=1,
        positions="none",
    )
    model = build_model(config)
    assert isinstance(model, RecurrentSeq2Seq)
    return model.eval()


SRC = torch.tensor([[5, 6, 7, 8, EOS_ID], [9, 10, EOS_ID, PAD_ID, PAD_ID]])  # (2, 5), row 1 padded
TGT = torch.tensor([[SOS_ID, 8, 7, 6, 5], [SOS_ID, 10, 9, PAD_ID, PAD_ID]])


# ------------------------------------------------------------------ the GRU


def test_gru_cell_equals_torch_gru_cell_given_the_same_weights() -> None:
    torch.manual_seed(0)
    reference = nn.GRUCell(6, 5)
    ours = GRUCell(6, 5)
    ours.load_state_dict(reference.state_dict())  # same names, same layout
    x, h = torch.randn(4, 6), torch.randn(4, 5)
    torch.testing.assert_close(ours(x, h), reference(x, h), atol=1e-6, rtol=1e-6)
    w = reference.state_dict()
    step = gru_step(x, h, w["weight_ih"], w["weight_hh"], w["bias_ih"], w["bias_hh"])
    torch.testing.assert_close(step, reference(x, h), atol=1e-6, rtol=1e-6)


def test_gru_cell_stepped_over_a_sequence_equals_torch_gru() -> None:
    """The encoder uses torch.nn.GRU; stepping our cell with its weights gives every state."""
    torch.manual_seed(1)
    gru = nn.GRU(4, 3, batch_first=True)
    cell = GRUCell(4, 3)
    cell.load_state_dict({k.removesuffix("_l0"): v for k, v in gru.state_dict().items()})
    x = torch.randn(2, 7, 4)
    states, final = gru(x)
    h = torch.zeros(2, 3)
    for t in range(7):
        h = cell(x[:, t], h)
        torch.testing.assert_close(h, states[:, t], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(h, final[0], atol=1e-6, rtol=1e-6)


def test_additive_scores_are_v_dot_tanh_of_the_sum() -> None:
    torch.manual_seed(2)
    s, h, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(4)
    scores = additive_scores(s, h, v)
    assert scores.shape == (2, 3, 5)
    expected = torch.tensor(
        [[[float(v @ torch.tanh(s[b, i] + h[b, j])) for j in range(5)] for i in range(3)] for b in range(2)]
    )
    torch.testing.assert_close(scores, expected, atol=1e-6, rtol=1e-6)


# ------------------------------------------------------------------ shapes, padding, attention


@pytest.mark.parametrize("kind", KINDS)
def test_shapes(kind: str) -> None:
    model = recurrent(kind)
    memory = model.encode(SRC)
    assert memory.shape == (2, 5, 16)
    assert model(SRC, TGT).shape == (2, 5, 16)
    assert model(SRC, TGT[:, :2]).shape == (2, 2, 16)
    assert model.position_codes(8) is None


@pytest.mark.parametrize("kind", KINDS)
def test_padding_is_masked_in_the_encoder(kind: str) -> None:
    """A padded row gives what the same row gives alone: its recurrence stops at its last real
    token, PAD positions hold zeros and receive no attention."""
    model = recurrent(kind)
    with torch.no_grad():
        batched = model(SRC, TGT)
        alone = model(SRC[1:, :3], TGT[1:])
        memory = model.encode(SRC)
        other_pad = model(torch.where(SRC == PAD_ID, PAD_ID, SRC), TGT)
        unmasked = model(SRC, TGT, options=InferenceOptions(padding_mask=False))
    torch.testing.assert_close(batched[1], alone[0], atol=1e-5, rtol=1e-5)
    assert memory[1, 3:].abs().max() == 0
    torch.testing.assert_close(other_pad, batched)
    assert (unmasked[1] - batched[1]).abs().max() > 1e-4  # the option lets the PADs in


def test_additive_weights_sum_to_one_per_output_step_and_skip_padding() -> None:
    model = recurrent("bahdanau")
    capture = AttentionCapture()
    with torch.no_grad():
        model(SRC, TGT, capture=capture)
    assert capture.names == ["cross.0"] and capture.attends
    record = capture["cross.0"]
    weights = record.weights  # (B, 1, Tt, Ts): one layer, one head
    assert weights.shape == (2, 1, 5, 5) and capture.weights("cross").shape == (1, 1, 5, 5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 1, 5))
    assert weights[1, 0, :, 3:].abs().max() == 0  # PAD keys get nothing
    torch.testing.assert_close(masked_softmax(record.scores, record.mask), weights)
    torch.testing.assert_close(record.z[:, 0], weights[:, 0] @ record.v[:, 0])  # the contexts c_t
    assert record.scale == 1.0 and record.position_bias is None and capture.context is None


def test_a_gru_without_attention_records_its_one_context_vector() -> None:
    model = recurrent("gru")
    capture = AttentionCapture()
    with torch.no_grad():
        model(SRC, TGT, capture=capture)
        memory = model.encode(SRC)
    assert capture.records == [] and not capture.attends and capture.kinds() == []
    assert capture.context is not None and capture.context.shape == (2, 16)
    torch.testing.assert_close(capture.context[0], memory[0, 4])  # the final state of each row
    torch.testing.assert_close(capture.context[1], memory[1, 2])


@pytest.mark.parametrize("kind", KINDS)
def test_ablating_the_context_changes_the_output_and_capture_changes_nothing(kind: str) -> None:
    model = recurrent(kind)
    with torch.no_grad():
        plain = model(SRC, TGT)
        captured = model(SRC, TGT, capture=AttentionCapture())
        ablated = model(SRC, TGT, options=InferenceOptions(ablate=frozenset({("cross", 0, 0)})))
    torch.testing.assert_close(captured, plain)
    assert (ablated - plain).abs().max() > 1e-4


def test_recurrent_configs_are_validated_and_old_configs_still_load() -> None:
    with pytest.raises(ConfigError, match="model: 'lstm' is not one of"):
        ModelConfig(arch="seq2seq", model="lstm")
    for field, value in (("arch", "gpt"), ("positions", "sinusoidal"), ("n_layers", 2), ("n_heads", 4)):
        fields = dict(arch="seq2seq", model="gru", n_heads=1, n_layers=1, positions="none", d_model=16)
        with pytest.raises(ConfigError, match=f"{field}: a 'gru' model needs"):
            ModelConfig(**{**fields, field: value})
    old = {
        "arch": "seq2seq",
        "vocab_size": 30,
        "d_model": 64,
        "n_heads": 4,
        "n_layers": 2,
        "positions": "rope",
    }
    assert ModelConfig.from_dict(old).model == "transformer"
    assert load_checkpoint("reverse-rope").config.model == "transformer"  # saved before the field existed
    with pytest.raises(ConfigError, match="positions"):
        recurrent("gru").encode(SRC, positions=torch.arange(5))


# ------------------------------------------------------------------ the machinery


@pytest.mark.parametrize("kind", KINDS)
def test_train_save_load_trace_and_eval(kind: str, tmp_path: Path) -> None:
    config = TrainConfig(task="reverse", steps=20, batch_size=16, device="cpu", eval_every=0)
    model, task = prepare_run(config, "none", size="tiny", model=kind)
    assert model.config.model == kind and model.config.d_model == 64
    events = list(Trainer(model, task, config).run())
    assert isinstance(events[-1], DoneEvent) and set(events[-1].metrics["exact_match"]) == {
        str(n) for n in REPORT_LENGTHS
    }
    folder = save_checkpoint(tmp_path / f"tiny-{kind}", model, task.tokenizer, train_args={"arch": kind})
    ckpt = load_checkpoint(folder)
    assert isinstance(ckpt.model, RecurrentSeq2Seq) and ckpt.task == "reverse"
    src, tgt = SRC.clone(), TGT.clone()
    with torch.no_grad():
        torch.testing.assert_close(ckpt.model(src, tgt), model.eval()(src, tgt))
    tr = trace_seq2seq(ckpt.model, ckpt.tokenizer, "hello")
    payload = tr.to_json(ckpt.name)
    if kind == "bahdanau":
        assert set(tr.attention) == {"cross"} and tr.attention["cross"].shape == (
            1,
            1,
            len(tr.target_tokens),
            6,
        )
        assert "context" not in payload
    else:
        assert tr.attention == {} and payload["attention"] == {} and len(payload["context"]) == 64
    result = evaluate_reversal(ckpt.model, reversal_tokenizer(), [3, 5], samples=10)
    assert set(result) == {"exact_match", "token_accuracy"}


def test_the_recurrent_kinds_belong_to_reversal_only() -> None:
    config = TrainConfig(task="lm", steps=1, batch_size=2, device="cpu", eval_every=0, block_size=16)
    with pytest.raises(ConfigError, match="arch: 'gru' is not one of"):
        prepare_run(config, "none", text="some text to model " * 20, model="gru")
    reverse = TrainConfig(task="reverse", steps=1, batch_size=2, device="cpu", random_positions=True)
    with pytest.raises(ConfigError, match="random_positions"):
        prepare_run(reverse, "none", model="bahdanau")


def test_head_tools_refuse_a_recurrent_model_clearly() -> None:
    from transformer_core.interp.patching import activation_patching
    from transformer_core.models import require_transformer

    model = recurrent("bahdanau", vocab_size=30)
    with pytest.raises(ConfigError, match="patch: 'bahdanau' is a recurrent model"):
        activation_patching(model, reversal_tokenizer(), "abc", "abd")
    with pytest.raises(ConfigError, match="heads: 'gru' is a recurrent model .* use `trace`"):
        require_transformer(recurrent("gru"), "heads")
    require_transformer(load_checkpoint("reverse-rope").model, "heads")  # a Transformer passes
