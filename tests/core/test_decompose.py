"""Why a head attends: the score split into the residual stream's parts (every scheme, norm and
attention kind), value-weighted attention against a hand computation, gpt-induction's
K-composition read off the split, and the `explain` and `trace --value-weighted` commands."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.support.cli import cli
from tests.support.models import _tiny_config
from transformer_core import AttentionCapture
from transformer_core.errors import ConfigError
from transformer_core.interp import trace_gpt
from transformer_core.interp.attribution import value_weighted, weighted_attention
from transformer_core.interp.decompose import (
    BIAS,
    POSITION,
    decompose_scores,
    normed_parts,
    project,
    stream_parts,
)
from transformer_core.interp.geometry import pca_2d, position_r2, qk_geometry
from transformer_core.io import load_checkpoint
from transformer_core.io.data import induction_ids, reversal_tokenizer
from transformer_core.models import build_model

SCHEMES = ["sinusoidal", "learned", "rope", "alibi", "t5", "none"]


def captured(arch: str, positions: str, norm: str = "layernorm", seed: int = 0, **overrides):
    torch.manual_seed(seed)
    model = build_model(_tiny_config(arch, positions, n_layers=3, max_len=32, norm=norm, **overrides)).eval()
    capture = AttentionCapture()
    if arch == "gpt":
        model(torch.randint(4, 16, (1, 9)), capture=capture)
    else:
        model(torch.randint(4, 16, (1, 7)), torch.randint(4, 16, (1, 6)), capture=capture)
    return model, capture


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("positions", SCHEMES)
@pytest.mark.parametrize("arch", ["gpt", "seq2seq"])
def test_the_parts_sum_to_every_captured_score(arch: str, positions: str, norm: str) -> None:
    model, capture = captured(arch, positions, norm)
    for record in capture.records:
        for head in range(2):
            for query in range(record.scores.size(2)):
                parts = decompose_scores(model, capture, record.kind, record.layer, head, query)
                assert parts.contributions.shape == (
                    record.scores.size(3),
                    len(parts.query_parts),
                    len(parts.key_parts),
                )
                assert parts.gap < 1e-4, (record.name, head, query, parts.gap)
                np.testing.assert_allclose(parts.scores, record.scores[0, head, query].numpy())
                bias = record.position_bias
                assert (parts.position != 0).any() == (bias is not None)


def test_the_split_queries_and_keys_are_the_captured_ones() -> None:
    """Summed over their parts, the projected (and rotated) queries and keys are the model's own."""
    model, capture = captured("gpt", "sinusoidal")
    layer, head = 2, 1
    stream = stream_parts(model, capture, "self", layer)
    assert torch.allclose(stream.parts.sum(0), capture.residuals[f"self.{layer}.resid_pre"][0], atol=1e-5)
    normed = normed_parts(stream, model.blocks[layer].norm_self)
    q = project(normed, model.blocks[layer].self_attn, 0, head).sum(0)
    k = project(normed, model.blocks[layer].self_attn, 1, head).sum(0)
    record = capture[f"self.{layer}"]
    assert torch.allclose(q, record.q[0, head], atol=1e-5) and torch.allclose(k, record.k[0, head], atol=1e-5)


def test_the_parts_are_named_by_what_wrote_them() -> None:
    model, capture = captured("gpt", "learned")
    names = decompose_scores(model, capture, "self", 2, 0, 3).query_parts
    assert names == ["embed", POSITION, "L0H0", "L0H1", "MLP0", "L1H0", "L1H1", "MLP1", BIAS]
    model, capture = captured("gpt", "rope", mlp=False)  # relative positions, attention only
    assert decompose_scores(model, capture, "self", 1, 0, 3).query_parts == ["embed", "L0H0", "L0H1", BIAS]
    model, capture = captured("seq2seq", "sinusoidal")
    cross = decompose_scores(model, capture, "cross", 1, 0, 2)
    assert cross.query_parts[:6] == ["dec embed", "dec pos", "dec L0H0", "dec L0H1", "dec L0xH0", "dec L0xH1"]
    assert cross.query_parts[-3:] == ["dec L1H0", "dec L1H1", "dec bias"]  # the block's own self-attention
    assert cross.key_parts[-2:] == ["enc MLP2", "enc bias"]  # the encoder's whole stream


def test_post_ln_and_recurrent_models_are_refused() -> None:
    model, capture = captured("gpt", "sinusoidal", norm_position="post")
    with pytest.raises(ConfigError, match="pre-LN"):
        decompose_scores(model, capture, "self", 0, 0, 0)


@pytest.mark.parametrize("arch", ["gpt", "seq2seq"])
def test_value_weighted_attention_is_alpha_times_the_norm_of_what_each_value_sends(arch: str) -> None:
    model, capture = captured(arch, "rope")
    weighted = weighted_attention(model, capture)
    assert set(weighted) == set(capture.kinds())
    for record in capture.records:
        attn = model.blocks[record.layer] if arch == "gpt" else None
        if arch != "gpt":
            stack = model.encoder if record.kind == "encoder_self" else model.decoder
            attn = stack[record.layer]
        module = attn.cross_attn if record.kind == "cross" else attn.self_attn
        w_o = module.out_proj.weight.detach()  # (d_model, H * d_head)
        for head in range(2):
            for query in range(record.weights.size(2)):
                for key in range(record.weights.size(3)):
                    alpha = record.weights[0, head, query, key]
                    sent = w_o[:, head * 8 : (head + 1) * 8] @ record.v[0, head, key]  # W_O^h v_j
                    expected = float(alpha * sent.norm())
                    assert weighted[record.kind][record.layer, head, query, key] == pytest.approx(
                        expected, abs=1e-5
                    )
    one = value_weighted(torch.ones(1, 1, 1, 2), torch.tensor([[[[1.0, 0.0], [0.0, 0.0]]]]), torch.eye(2))
    assert one.tolist() == [[[[1.0, 0.0]]]]  # a key whose value maps to nothing sends nothing


def test_gpt_induction_head_reads_its_key_through_a_layer_0_head() -> None:
    """At induction targets (the token after the current token's earlier occurrence), the largest
    part of the induction head's score is the query's token embedding against a layer-0 head's
    output at the key: K-composition (Elhage et al. 2021)."""
    ckpt = load_checkpoint("gpt-induction")
    tokenizer = reversal_tokenizer()
    rows, starts = induction_ids(tokenizer, 8, torch.Generator().manual_seed(0), 48, 10, 16)
    largest, shares = [], []
    for row, start in zip(rows.tolist(), starts.tolist(), strict=True):
        text = tokenizer.decode(row[:48])
        trace = trace_gpt(ckpt.model, ckpt.tokenizer, text)
        for query in range(start + 1, 2 * start):
            parts = decompose_scores(ckpt.model, trace.capture, "self", 1, 1, query)
            cell = parts.contributions[query - start + 1]  # (Pq, Pk) at the induction target
            a, b = np.unravel_index(np.abs(cell).argmax(), cell.shape)
            largest.append((parts.query_parts[a], parts.key_parts[b][:2]))
            layer0 = [i for i, n in enumerate(parts.key_parts) if n.startswith("L0H")]
            shares.append(cell[parts.query_parts.index("embed"), layer0])
    hits = sum(pair == ("embed", "L0") for pair in largest) / len(largest)
    assert len(largest) >= 80 and hits >= 0.9
    mean = np.mean(shares, axis=0)
    assert mean.argmax() in (1, 2) and mean[1] > 0  # the previous-token heads (L0H1, L0H2) carry it


def test_explain_and_value_weighted_trace_from_the_command_line() -> None:
    out = json.loads(cli("explain", "gpt-induction", "qwhzkfjtmbrxqwhzkfjtmbrx", "--head", "1.1",
                         "--query", "15", "--json").stdout)  # fmt: skip
    assert out["key"] == 4 and out["tokens"] == {"query": "z", "key": "k"}  # after the earlier 'z'
    assert out["gap"] < 1e-4 and out["weight"] > 0.5
    cells = np.asarray(out["contributions"])
    assert cells.shape == (len(out["parts"]["query"]), len(out["parts"]["key"]))
    assert abs(cells.sum() + out["position"] - out["score"]) < 1e-4
    assert len(out["row"]["scores"]) == 24 and len(out["row"]["by_key_part"][0]) == len(out["parts"]["key"])
    cross = json.loads(cli("explain", "reverse-alibi", "attention", "--head", "cross:1.0", "--query", "2",
                           "--key", "3", "--json").stdout)  # fmt: skip
    assert cross["kind"] == "cross" and cross["key"] == 3 and cross["gap"] < 1e-4
    for args, message in (
        (("reverse-postln", "abc", "--head", "0.0", "--query", "1"), "pre-LN"),
        (("gpt-rope", "hello", "--head", "7.0", "--query", "1"), "outside"),
        (("gpt-rope", "hello", "--head", "0.0", "--query", "9"), "query positions (0-4)"),
        (("reverse-gru", "abc", "--head", "0.0", "--query", "1"), "pre-LN"),
    ):
        refused = cli("explain", *args, check=False)
        assert refused.returncode != 0 and message in refused.stderr and "Traceback" not in refused.stderr
    traced = json.loads(cli("trace", "reverse-rope", "abc", "--value-weighted", "--json").stdout)
    assert set(traced["weighted"]) == set(traced["attention"]) == {"encoder_self", "decoder_self", "cross"}
    assert np.asarray(traced["weighted"]["cross"]).shape == np.asarray(traced["attention"]["cross"]).shape


def test_pca_recovers_the_two_directions_of_a_low_rank_toy() -> None:
    rng = np.random.default_rng(0)
    u, v = np.linalg.qr(rng.normal(size=(16, 2)))[0].T  # two orthonormal directions in 16-D
    a, b = rng.normal(scale=3.0, size=(2, 500))
    x = np.outer(a, u) + np.outer(b, v) + rng.normal(scale=0.01, size=(500, 16)) + 5.0
    coords, axes, explained = pca_2d(x)
    basis = np.stack([u, v])
    assert np.allclose(np.abs(np.linalg.svd(axes @ basis.T)[1]), 1.0, atol=1e-3)  # the same plane
    assert explained.sum() > 0.999 and coords.shape == (500, 2)
    assert position_r2(coords, a) > 0.999  # a is a linear read-out of the plane
    assert position_r2(coords, rng.normal(size=500)) < 0.05


def test_absolute_schemes_put_position_in_the_geometry_rope_in_the_rotation_alibi_nowhere() -> None:
    texts = ["The with statement is used to wrap the execution of a block with",
             "Return the value of the named attribute of object. name must be"]  # fmt: skip

    def keys_r2(name: str, rotated: bool = False) -> float:
        ckpt = load_checkpoint(name)
        return float(np.median([qk_geometry(ckpt.model, ckpt.tokenizer, texts, 0, h, rotated=rotated).r2_keys
                                for h in range(4)]))  # fmt: skip

    assert keys_r2("gpt-sinusoidal") > 0.6 and keys_r2("gpt-learned") > 0.3
    assert keys_r2("gpt-rope") < 0.1 < 0.4 < keys_r2("gpt-rope", rotated=True)
    assert keys_r2("gpt-alibi") < 0.1


def test_a_querys_nearest_keys_are_its_highest_scores_in_its_own_text_and_past() -> None:
    ckpt = load_checkpoint("gpt-rope")
    texts = ["The with statement is used", "Return the value of the named"]
    g = qk_geometry(ckpt.model, ckpt.tokenizer, texts, 1, 0, rotated=True)
    assert g.vectors.shape == (2 * g.n_queries, ckpt.config.d_model // ckpt.config.n_heads)
    query = g.n_queries - 1  # the second text's last character
    nearest = g.nearest_keys(query, 5)
    first = int((g.windows[: g.n_queries] == 0).sum())
    assert (nearest >= first).all() and len(nearest) == 5  # the second text's keys only
    capture = AttentionCapture()
    ids = ckpt.tokenizer.encode(texts[1])
    with torch.no_grad():
        ckpt.model(torch.tensor([ids]), capture=capture)
    record = capture["self.1"]
    scores = (record.k[0, 0] @ record.q[0, 0, -1]).numpy()  # the rotated q·k of that query, (T,)
    assert list(nearest - first) == list(np.argsort(-scores, kind="stable")[:5])
