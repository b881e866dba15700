"""transformer_core.interp directly: head scores, one query step by step, and the trace JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.config import InferenceOptions, ModelConfig
from transformer_core.interp.heads import anti_diagonal_scores
from transformer_core.interp.inspection import (
    distribution_shift,
    future_cells,
    head_merge,
    query_steps,
    record_arrays,
    softmax_allowed,
)
from transformer_core.interp.trace import TOKEN_AXES, trace_gpt, trace_seq2seq
from transformer_core.io.data import reversal_tokenizer
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.models import GPT

TOKENIZER = CharTokenizer("abcdefghijkl")  # 16 ids with the four specials


# ------------------------------------------------------------------ one query, step by step


@pytest.mark.parametrize("positions", ["alibi", "rope", "sinusoidal"])
def test_query_steps_redo_the_models_arithmetic(make_gpt, positions):
    model = make_gpt(positions)
    tr = trace_gpt(model, TOKENIZER, "abcdefg")
    rec = record_arrays(tr.capture["self.1"])
    s = query_steps(rec, head=1, query=4)
    d = s.q.shape[0]
    assert s.scale == pytest.approx(1 / np.sqrt(d))
    assert np.allclose(s.dot, s.k @ s.q, atol=1e-6)
    assert np.allclose(s.scaled, s.dot / np.sqrt(d), atol=1e-6)
    bias = np.zeros_like(s.scaled) if s.bias is None else s.bias
    assert (s.bias is not None) == (positions == "alibi")
    assert np.allclose(s.scaled + bias, s.scores, atol=1e-4)  # what softmax was fed
    assert list(s.allowed) == [True] * 5 + [False] * 2  # causal: keys 0..4
    assert np.allclose(softmax_allowed(s.scores, s.allowed), s.weights, atol=1e-5)
    assert np.all(s.weights[~s.allowed] == 0.0)
    assert np.allclose(s.weights, tr.attention["self"][1, 1, 4], atol=1e-6)
    assert np.allclose(s.output, s.weights @ s.v, atol=1e-6)
    assert s.rotated == (positions == "rope")


def test_query_steps_output_is_what_the_head_writes(make_gpt):
    """Σ w v of every query equals the head's slice of the attention output before W_O."""
    model = make_gpt("sinusoidal")
    tr = trace_gpt(model, TOKENIZER, "abcd")
    record = tr.capture["self.0"]
    rec = record_arrays(record)
    expected = (record.weights @ record.v)[0].numpy()  # (H, T, d)
    for head in range(2):
        for query in range(4):
            assert np.allclose(query_steps(rec, head, query).output, expected[head, query], atol=1e-6)


def test_record_arrays_reads_one_batch_row(make_gpt):
    model = make_gpt("sinusoidal")
    tr = trace_gpt(model, TOKENIZER, "abc")
    rec = record_arrays(tr.capture["self.0"])
    assert rec["q"].shape == (2, 3, 8) and rec["weights"].shape == (2, 3, 3)
    assert rec["mask"].dtype == bool and not rec["mask"][0, 0, 1]
    assert rec["bias"] is None and isinstance(rec["scale"], float)


def test_softmax_allowed_zeroes_masked_entries_and_survives_all_masked():
    scores = np.array([1.0, 2.0, 50.0, 0.5])
    allowed = np.array([True, True, False, True])
    out = softmax_allowed(scores, allowed)
    assert out[2] == 0.0 and out.sum() == pytest.approx(1.0)
    e = np.exp(scores[[0, 1, 3]] - 2.0)
    assert np.allclose(out[[0, 1, 3]], e / e.sum())
    assert np.all(softmax_allowed(scores, np.zeros(4, dtype=bool)) == 0.0)


# ------------------------------------------------------------------ head scores


def test_anti_diagonal_score_of_a_mirror_a_copy_and_a_flat_head():
    n = 4
    cross = np.zeros((1, 3, n + 1, n + 1))
    for t in range(n):
        cross[0, 0, t, n - 1 - t] = 1.0  # reverses
        cross[0, 1, t, t] = 1.0  # copies
    cross[0, :2, n, n] = 1.0
    cross[0, 2] = 1.0 / (n + 1)  # flat
    scores = anti_diagonal_scores(cross, n)
    assert scores.dtype == np.float32 and scores.shape == (1, 3)
    assert scores[0, 0] == pytest.approx(1.0)
    assert scores[0, 1] == pytest.approx(0.0)  # n even: the copy never touches the mirror
    assert scores[0, 2] == pytest.approx(1 / (n + 1))


def test_distribution_shift_is_total_variation_and_kl():
    p = np.array([0.7, 0.2, 0.1, 0.0])
    q = np.array([0.4, 0.4, 0.1, 0.1])
    tv, kl = distribution_shift(p, q)
    assert tv == pytest.approx(0.3)
    assert kl == pytest.approx(0.7 * np.log(0.7 / 0.4) + 0.2 * np.log(0.2 / 0.4))
    assert distribution_shift(q, q) == (0.0, 0.0)


def test_future_cells_are_above_the_diagonal_and_over_the_threshold():
    w = np.array([[0.5, 0.5, 0.0], [0.2, 0.795, 0.005], [0.1, 0.1, 0.8]])
    assert future_cells(w).tolist() == [[False, True, False], [False, False, False], [False, False, False]]
    assert future_cells(w, threshold=0.001)[1, 2]


# ------------------------------------------------------------------ the trace JSON


def test_gpt_trace_json_is_the_cli_layout(make_gpt):
    tr = trace_gpt(make_gpt("rope"), TOKENIZER, "abcé", InferenceOptions(causal=False))
    payload = json.loads(json.dumps(tr.to_json("tiny")))  # JSON-ready as it is
    assert list(payload) == ["checkpoint", "input", "output", "tokens", "attention", "unknown_characters"]
    assert payload["checkpoint"] == "tiny" and payload["input"] == "abcé"
    assert payload["tokens"] == {"source": ["a", "b", "c", "<unk>"]}
    assert payload["output"] == TOKENIZER.decode([int(tr.next_token_probs.argmax())])
    assert payload["unknown_characters"] == ["é"]
    weights = np.array(payload["attention"]["self"])
    assert weights.shape == (2, 2, 4, 4)  # [layer][head][query][key]
    assert np.allclose(weights, tr.attention["self"], atol=5e-7)
    assert np.all(np.round(weights, 6) == weights)
    assert tr.axes("self") == (tr.tokens, tr.tokens)


def test_seq2seq_trace_json_and_axes(make_seq2seq):
    tokenizer = reversal_tokenizer("abcdefghijkl")
    model = make_seq2seq("sinusoidal", vocab_size=len(tokenizer))
    tr = trace_seq2seq(model, tokenizer, "abc", max_new_tokens=4)
    payload = tr.to_json("rev")
    assert "unknown_characters" not in payload  # only when some
    assert payload["tokens"] == {"source": ["a", "b", "c", "<eos>"], "target": tr.target_tokens}
    assert payload["output"] == tr.output
    for kind, (q_axis, k_axis) in TOKEN_AXES.items():
        if kind == "self":
            continue
        queries, keys = tr.axes(kind)
        assert (queries, keys) == (payload["tokens"][q_axis], payload["tokens"][k_axis])
        assert np.array(payload["attention"][kind]).shape == (2, 2, len(queries), len(keys))
    assert tr.axes("cross") == (tr.target_tokens, tr.source_tokens)
    assert np.allclose(np.array(payload["attention"]["cross"]), tr.attention["cross"], atol=5e-7)


@pytest.mark.parametrize("ablated", [(), (2,)])
def test_head_merge_is_the_layers_attention_output_at_the_query(ablated: tuple[int, ...]) -> None:
    """The heads' outputs side by side, through W_O and its bias, equal the attention sublayer's
    own output at that position; an ablated head contributes zeros, as the model's ablation does."""
    torch.manual_seed(0)
    model = GPT(ModelConfig(vocab_size=20, d_model=16, n_heads=4, n_layers=2, d_ff=32, max_len=16)).eval()
    ids = torch.randint(4, 20, (1, 9))
    options = InferenceOptions(ablate=frozenset(("self", 1, h) for h in ablated))
    capture, outputs = AttentionCapture(), []
    hook = model.blocks[1].self_attn.register_forward_hook(lambda m, a, out: outputs.append(out))
    with torch.no_grad():
        model(ids, options=options, capture=capture)
    hook.remove()
    rec = record_arrays(next(r for r in capture.records if r.layer == 1))
    w_o, b_o = (
        t.detach().numpy()
        for t in (model.blocks[1].self_attn.out_proj.weight, model.blocks[1].self_attn.out_proj.bias)
    )
    merge = head_merge(rec, 6, w_o, b_o, ablated)
    assert merge.heads.shape == (4, 4) and merge.concat.shape == (16,)
    assert np.allclose(merge.output, outputs[0][0, 6].numpy(), atol=1e-5)
    assert not ablated or not merge.heads[2].any()
