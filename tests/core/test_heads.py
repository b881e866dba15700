"""Head detectors, rollout, logit lens, ablation sweep and gradient proxy: values checked
against hand-built patterns, hand-computed products and explicit ablated forwards."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.config import HeadGates, InferenceOptions, ModelConfig
from transformer_core.generation import greedy_decode
from transformer_core.interp.heads import (
    APPLIES,
    CLI_SCORES,
    ProbePatterns,
    anti_diagonal_template,
    default_probe_set,
    detect_heads,
    diagonal_template,
    duplicate_token_template,
    entropy_score,
    first_token_template,
    induction_template,
    mean_distance_score,
    monotonic_template,
    previous_token_template,
    score_patterns,
    template_score,
)
from transformer_core.interp.importance import (
    ablation_sweep,
    batch_loss,
    exact_match_rows,
    gpt_probe_batch,
    gradient_importance,
    per_sequence_loss,
    reversal_probe_batch,
)
from transformer_core.interp.lens import attention_rollout, logit_lens, rollout_of
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.data import encode_source, reversal_tokenizer
from transformer_core.models import GPT

T = 6


def causal_uniform(t: int) -> np.ndarray:
    """Row i spreads its weight evenly over keys 0..i."""
    return np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]


def pure_previous(t: int) -> np.ndarray:
    """Row i puts all weight on key i-1 (row 0 on itself: it has nothing earlier)."""
    a = np.eye(t, k=-1)
    a[0, 0] = 1.0
    return a


# ---------------------------------------------------------------- templates and scores


def test_pure_previous_token_pattern_scores_one_and_uniform_scores_one_over_i_plus_one():
    assert template_score(pure_previous(T), previous_token_template(T)) == pytest.approx(1.0)
    expected = np.mean([1 / (i + 1) for i in range(1, T)])  # rows 1..T-1 have a previous token
    assert template_score(causal_uniform(T), previous_token_template(T)) == pytest.approx(expected)
    # TransformerLens's detect_head counts every row: row 0 weighs in with 0
    assert template_score(pure_previous(T), previous_token_template(T), rows="all") == pytest.approx(
        (T - 1) / T
    )


def test_diagonal_and_first_token_scores():
    assert template_score(np.eye(T), diagonal_template(T)) == pytest.approx(1.0)
    assert template_score(causal_uniform(T), diagonal_template(T)) == pytest.approx(
        np.mean([1 / (i + 1) for i in range(T)])
    )
    sink = np.zeros((T, T))
    sink[:, 0] = 1.0
    assert template_score(sink, first_token_template(T, T)) == pytest.approx(1.0)
    assert template_score(pure_previous(T), first_token_template(T, T)) == pytest.approx(2 / T)  # rows 0, 1


def test_duplicate_and_induction_templates_by_hand():
    tokens = [5, 6, 7, 5, 6, 7]  # a segment of 3 repeated
    dup = duplicate_token_template(tokens)
    want_dup = np.zeros((6, 6))
    want_dup[3, 0] = want_dup[4, 1] = want_dup[5, 2] = 1
    np.testing.assert_array_equal(dup, want_dup)
    ind = induction_template(tokens)
    want_ind = np.zeros((6, 6))
    want_ind[3, 1] = want_ind[4, 2] = want_ind[5, 3] = 1  # key after the earlier copy
    np.testing.assert_array_equal(ind, want_ind)
    # a perfect induction head on the second copy scores 1, a previous-token head 0
    a = pure_previous(6)
    a[3:] = want_ind[3:]
    assert template_score(a, ind) == pytest.approx(1.0)
    assert template_score(pure_previous(6), ind) == pytest.approx(0.0)


def test_cross_templates_and_custom_template():
    anti = anti_diagonal_template(4, 4, 3)  # SOS+3 outputs x 3 chars+EOS
    assert [tuple(x) for x in np.argwhere(anti)] == [(0, 2), (1, 1), (2, 0)]
    mono = monotonic_template(3, 5)
    assert [tuple(x) for x in np.argwhere(mono)] == [(0, 0), (1, 2), (2, 4)]
    rev = np.zeros((4, 4))
    rev[np.arange(3), [2, 1, 0]] = 1.0
    rev[3, 3] = 1.0
    probe = ProbePatterns(
        weights={"cross": rev[None, None]},
        query_tokens={"cross": [1, 7, 6, 5]},
        key_tokens={"cross": [5, 6, 7, 2]},
        n_source=3,
    )
    scores = score_patterns(
        probe, custom={"to_eos": lambda q, k: np.outer(np.ones(len(q)), np.array(k) == 2)}
    )
    assert scores["cross"]["anti_diagonal"][0, 0] == pytest.approx(1.0)
    assert scores["cross"]["to_eos"][0, 0] == pytest.approx(0.25)
    for name in ("previous_token", "diagonal", "duplicate_token", "induction", "mean_distance"):
        assert np.isnan(scores["cross"][name]).all(), name  # not applicable to cross-attention
    assert not np.isnan(scores["cross"]["first_token"]).any()


def test_every_score_is_defined_or_not_applicable_for_every_kind():
    for name, kinds in APPLIES.items():
        assert set(kinds) <= {"self", "encoder_self", "decoder_self", "cross"}, name
    assert set(CLI_SCORES) == {
        "previous_token",
        "diagonal",
        "first_token",
        "duplicate_token",
        "induction",
        "anti_diagonal",
        "entropy",
        "mean_distance",
    }


def test_entropy_and_mean_distance():
    uniform4 = np.full((3, 4), 0.25)
    assert entropy_score(uniform4) == pytest.approx(math.log(4))
    assert entropy_score(np.eye(T)) == pytest.approx(0.0)
    assert entropy_score(causal_uniform(T)) == pytest.approx(np.mean([math.log(i + 1) for i in range(T)]))
    assert mean_distance_score(pure_previous(T)) == pytest.approx((T - 1) / T)
    assert mean_distance_score(np.eye(T)) == pytest.approx(0.0)


# ---------------------------------------------------------------- rollout and logit lens


def test_rollout_is_the_product_of_residual_mixed_head_means():
    rng = np.random.default_rng(0)
    w = rng.random((3, 2, 4, 4))
    w /= w.sum(-1, keepdims=True)
    mixed = [0.5 * np.eye(4) + 0.5 * w[layer].mean(0) for layer in range(3)]
    mixed = [m / m.sum(-1, keepdims=True) for m in mixed]
    expected = mixed[2] @ mixed[1] @ mixed[0]
    np.testing.assert_allclose(attention_rollout(w), expected, atol=1e-12)
    np.testing.assert_allclose(attention_rollout(w).sum(-1), 1.0)


def test_rollout_of_a_model_uses_its_captured_attention(make_gpt, make_seq2seq):
    gpt = make_gpt("rope")
    cap = AttentionCapture()
    gpt(torch.tensor([[4, 5, 6, 7]]), capture=cap)
    np.testing.assert_allclose(rollout_of(gpt, [4, 5, 6, 7]), attention_rollout(cap.weights("self").numpy()))
    s2s = make_seq2seq()
    assert rollout_of(s2s, [4, 5, 6]).shape == (4, 4)  # + EOS


def test_logit_lens_last_layer_is_the_models_prediction_and_residuals_are_named(make_gpt):
    gpt = make_gpt("learned")
    tok = reversal_tokenizer("abcdefghijkl")  # 16 ids like the tiny model
    ids = [4, 5, 6, 4, 5]
    lens = logit_lens(gpt, tok, ids, k=3)
    assert lens.rows == ["embed", "layer 0", "layer 1"]
    assert lens.top_ids.shape == (3, 5, 3)
    with torch.no_grad():
        probs = torch.softmax(gpt(torch.tensor([ids]))[0], -1)
    top = probs.topk(3, -1)
    np.testing.assert_array_equal(lens.top_ids[-1], top.indices.numpy())
    np.testing.assert_allclose(lens.top_probs[-1], top.values.numpy(), atol=1e-6)
    cap = AttentionCapture()
    gpt(torch.tensor([ids]), capture=cap)
    assert list(cap.residuals) == [
        "self.0.resid_pre",
        "self.0.resid_post",
        "self.1.resid_pre",
        "self.1.resid_post",
    ]
    torch.testing.assert_close(cap.residuals["self.0.resid_post"], cap.residuals["self.1.resid_pre"])


# ---------------------------------------------------------------- ablation and gradients


def test_ablation_sweep_equals_per_head_ablated_forwards(make_gpt):
    gpt = make_gpt("rope")
    batch = gpt_probe_batch([[4, 5, 6, 7, 8, 4, 5], [9, 10, 11, 9, 10]])
    base, _, delta, em = ablation_sweep(gpt, batch)
    assert em is None
    with torch.no_grad():
        assert base == pytest.approx(batch_loss(gpt(*batch.inputs), batch.targets))
        for layer in range(2):
            for head in range(2):
                opts = InferenceOptions(ablate={("self", layer, head)})
                ablated = batch_loss(gpt(*batch.inputs, options=opts), batch.targets)
                assert delta["self"][layer, head] == pytest.approx(ablated - base, abs=1e-6)
    assert np.abs(delta["self"]).max() > 0


def test_seq2seq_sweep_and_exact_match_equal_greedy_decoding():
    ckpt = load_checkpoint("reverse-rope")
    texts = ["attention", "abc", "hello", "zyxwvut"]
    batch = reversal_probe_batch(ckpt.tokenizer, texts)
    base, base_em, delta, d_em = ablation_sweep(ckpt.model, batch)
    assert d_em is not None and set(d_em) == {"encoder_self", "decoder_self", "cross"}
    src = encode_source(ckpt.tokenizer, texts)
    for kind, layer, head in [("cross", 1, 3), ("decoder_self", 1, 1), ("encoder_self", 0, 0)]:
        opts = InferenceOptions(ablate={(kind, layer, head)})
        with torch.no_grad():
            greedy = greedy_decode(ckpt.model, src, 12, options=opts)
            logits = ckpt.model(*batch.inputs, options=opts)
        truth = [ckpt.tokenizer.encode(t[::-1]) for t in texts]
        greedy_em = np.mean([g == t for g, t in zip(greedy, truth, strict=True)])
        assert exact_match_rows(logits, batch.targets).float().mean().item() == pytest.approx(greedy_em)
        assert d_em[kind][layer, head] == pytest.approx(greedy_em - base_em)
        assert delta[kind][layer, head] == pytest.approx(batch_loss(logits, batch.targets) - base, abs=1e-5)


def test_gates_of_one_are_a_no_op_and_zero_gates_ablate(make_gpt):
    gpt = make_gpt("alibi")
    ids = torch.tensor([[4, 5, 6, 7, 8]])
    ones = HeadGates({"self": torch.ones(2, 2)})
    zero = torch.ones(2, 2)
    zero[1, 0] = 0.0
    with torch.no_grad():
        torch.testing.assert_close(gpt(ids, options=InferenceOptions(head_gates=ones)), gpt(ids))
        torch.testing.assert_close(
            gpt(ids, options=InferenceOptions(head_gates=HeadGates({"self": zero}))),
            gpt(ids, options=InferenceOptions(ablate={("self", 1, 0)})),
        )


def test_gradient_proxy_is_mean_absolute_per_sequence_gradient(make_gpt):
    gpt = make_gpt("sinusoidal")
    seqs = [[4, 5, 6, 7, 8, 4], [9, 10, 11, 12], [5, 5, 6, 6, 7]]
    batch = gpt_probe_batch(seqs)
    got = gradient_importance(gpt, batch)["self"]
    manual = []
    for s in seqs:
        one = gpt_probe_batch([s])
        gate = torch.ones(2, 2, requires_grad=True)
        logits = gpt(*one.inputs, options=InferenceOptions(head_gates=HeadGates({"self": gate})))
        (g,) = torch.autograd.grad(per_sequence_loss(logits, one.targets).sum(), gate)
        manual.append(g.abs().numpy())
    np.testing.assert_allclose(got, np.mean(manual, 0), rtol=1e-4, atol=1e-6)
    assert all(p.grad is None for p in gpt.parameters())  # the model is untouched


# ---------------------------------------------------------------- shipped models


@pytest.mark.parametrize("scheme", ["sinusoidal", "learned", "rope", "alibi"])
def test_shipped_reversal_models_have_an_anti_diagonal_cross_head_in_layer_1(scheme):
    ckpt = load_checkpoint(f"reverse-{scheme}")
    probes = default_probe_set(ckpt.tokenizer, "seq2seq", max_len=ckpt.config.max_len)
    scores = detect_heads(ckpt.model, ckpt.tokenizer, probes).scores
    assert scores["cross"]["anti_diagonal"][1].max() >= 0.8
    assert np.isnan(scores["encoder_self"]["anti_diagonal"]).all()


def test_gpt_induction_has_previous_token_then_induction_heads():
    ckpt = load_checkpoint("gpt-induction")
    assert isinstance(ckpt.model, GPT) and not ckpt.config.mlp and ckpt.config.n_layers == 2
    probes = default_probe_set(ckpt.tokenizer, "gpt", max_len=ckpt.config.max_len)
    scores = detect_heads(ckpt.model, ckpt.tokenizer, probes).scores["self"]
    prev_layer, _ = np.unravel_index(np.argmax(scores["previous_token"]), scores["previous_token"].shape)
    ind_layer, _ = np.unravel_index(np.argmax(scores["induction"]), scores["induction"].shape)
    assert prev_layer == 0 and scores["previous_token"][0].max() >= 0.5
    assert ind_layer == 1 and scores["induction"][1].max() >= 0.7
    assert scores["induction"][1].max() > scores["induction"][0].max() + 0.5
    from transformer_core.train.induction import InductionTask

    losses = InductionTask(ckpt.tokenizer, seq_len=ckpt.config.max_len).in_context_losses(ckpt.model)
    assert losses["loss_repeat"] < 0.25 * losses["loss_first_copy"]


def test_attention_only_config_has_no_mlp_and_old_configs_keep_one():
    assert ModelConfig().mlp is True  # checkpoints saved before the field load as before
    gpt = GPT(ModelConfig(vocab_size=16, d_model=16, n_heads=2, n_layers=1, d_ff=32, max_len=8, mlp=False))
    assert not any("ffn" in name for name, _ in gpt.named_parameters())


def test_heads_cli_prints_the_documented_shape():
    out = subprocess.run(
        [sys.executable, "-m", "transformer_core", "heads", "reverse-rope", "--probe", "attention", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    payload = json.loads(out)
    assert payload["checkpoint"] == "reverse-rope"
    assert payload["ablation_data"] == "your probe texts and random 5-letter segments repeated"
    assert payload["induction_probe_data"] is None and payload["composition"] is None  # a GPT's only
    assert len(payload["heads"]) == 3 * 2 * 4
    for h in payload["heads"]:
        assert set(h) == {"kind", "layer", "head", "scores", "ablation", "induction_probe"}
        assert h["induction_probe"] is None
        assert h["kind"] in {"encoder_self", "decoder_self", "cross"}
        assert set(h["scores"]) == set(CLI_SCORES)
        assert set(h["ablation"]) == {"delta_loss", "delta_exact_match"}
        assert isinstance(h["ablation"]["delta_exact_match"], float)
        assert (h["scores"]["anti_diagonal"] is None) == (h["kind"] != "cross")
        assert (h["scores"]["previous_token"] is None) == (h["kind"] == "cross")
    best = max(
        (h for h in payload["heads"] if h["kind"] == "cross"), key=lambda h: h["scores"]["anti_diagonal"]
    )
    assert best["layer"] == 1 and best["scores"]["anti_diagonal"] >= 0.8
