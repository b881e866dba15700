"""Q-, K- and V-composition scores (Elhage et al. 2021): a hand computation from the weights,
the induction circuit of the shipped gpt-induction, and the `heads` command's JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from transformer_core.errors import ConfigError
from transformer_core.interp.composition import Composition, composition_score, composition_scores
from transformer_core.interp.report import report_composition, report_detectors
from transformer_core.io.checkpoint import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]


def _heads_json(checkpoint: str) -> dict:
    """`python -m transformer_core heads CHECKPOINT --json`, run as a user would, parsed."""
    command = [sys.executable, "-m", "transformer_core", "heads", checkpoint, "--json"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout)


def _head(model, layer: int, head: int) -> dict[str, torch.Tensor]:
    """One head's W_q, W_k, W_v (d_head, d_model) and W_o (d_model, d_head) in torch's
    column-vector layout (y = W x), float64, read straight from the state dict."""
    sd = {k: v.double() for k, v in model.state_dict().items()}
    d, dh = model.config.d_model, model.config.d_head
    rows = slice(head * dh, (head + 1) * dh)
    w_in = sd[f"blocks.{layer}.self_attn.in_proj.weight"]
    return {
        "q": w_in[:d][rows],
        "k": w_in[d : 2 * d][rows],
        "v": w_in[2 * d :][rows],
        "o": sd[f"blocks.{layer}.self_attn.out_proj.weight"][:, rows],
    }


def _score(m: torch.Tensor, left: torch.Tensor, right: torch.Tensor) -> float:
    norm = torch.linalg.matrix_norm
    return (norm(m) / (norm(left) * norm(right))).item()


def test_scores_equal_a_hand_computation_from_the_weights(make_gpt) -> None:
    """Column-vector form: head 1 writes OV1 = W_o1 W_v1 y; head 2's logits are
    x_q^T W_q2^T W_k2 x_k. K: y enters x_k -> W_q2^T W_k2 OV1; Q: y enters x_q ->
    OV1^T W_q2^T W_k2; V: OV2 OV1. Each over |OV1| |W_q2^T W_k2| (or |OV2|)."""
    model = make_gpt("rope", n_layers=3, n_heads=2, d_model=16)
    c = composition_scores(model)
    for l1, h1, l2, h2 in [(0, 1, 2, 0), (1, 0, 2, 1), (0, 0, 1, 1)]:
        a, b = _head(model, l1, h1), _head(model, l2, h2)
        ov1, ov2, qk2 = a["o"] @ a["v"], b["o"] @ b["v"], b["q"].T @ b["k"]
        assert c.k[l1, h1, l2, h2] == pytest.approx(_score(qk2 @ ov1, ov1, qk2), abs=1e-9)
        assert c.q[l1, h1, l2, h2] == pytest.approx(_score(ov1.T @ qk2, ov1, qk2), abs=1e-9)
        assert c.v[l1, h1, l2, h2] == pytest.approx(_score(ov2 @ ov1, ov1, ov2), abs=1e-9)
    later = np.arange(3)[:, None, None, None] < np.arange(3)[None, None, :, None]
    for scores in (c.q, c.k, c.v):
        assert scores.shape == (3, 2, 3, 2)
        assert np.isnan(scores[~np.broadcast_to(later, scores.shape)]).all()
        defined = scores[np.broadcast_to(later, scores.shape)]
        assert defined.size == 3 * 4 and ((defined > 0) & (defined <= 1)).all()


def test_composition_score_of_simple_matrices() -> None:
    """A rank-r projector composed with itself scores 1/sqrt(r); orthogonal ranges score 0."""
    p = np.diag([1.0, 1.0, 1.0, 1.0, 0.0, 0.0])
    q = np.diag([0.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    assert composition_score(p, p) == pytest.approx(0.5)
    assert composition_score(p, q) == 0.0
    assert composition_score(np.stack([p, p]), np.stack([p, q])).tolist() == [0.5, 0.0]


def test_seq2seq_has_no_composition(make_seq2seq) -> None:
    with pytest.raises(ConfigError, match="seq2seq"):
        composition_scores(make_seq2seq())  # type: ignore[arg-type]


def test_previous_token_head_k_composes_into_the_induction_head() -> None:
    """gpt-induction (2 layers x 4 heads): detectors name L0H1 the strongest previous-token
    head (0.60) and L1H1 the strongest induction head (0.79). Its K-composition L0H1 -> L1H1
    is 0.222 against a median of 0.174 over all 16 K pairs (random heads of this size score
    about 1/sqrt(d_model) = 0.125); its Q- and V-composition are only 0.052 and 0.074, and K
    into L1H2 (the one layer-1 head that is no induction head, 0.11) is 0.085. The circuit
    works through the keys, as the induction mechanism says it must."""
    ckpt = load_checkpoint("gpt-induction", "cpu")
    detectors = report_detectors(ckpt).scores["self"]
    prev = (0, int(np.argmax(detectors["previous_token"][0])))
    induction = (1, int(np.argmax(detectors["induction"][1])))
    not_induction = (1, int(np.argmin(detectors["induction"][1])))
    assert (prev, induction, not_induction) == ((0, 1), (1, 1), (1, 2))
    c = report_composition(ckpt)
    assert isinstance(c, Composition)
    k = c.k[prev + induction]
    assert k > 1.2 * np.nanmedian(c.k)
    assert k == np.nanmax(c.k[prev[0], :, induction[0], induction[1]])  # the best writer into its keys
    assert k > 2 * max(c.q[prev + induction], c.v[prev + induction])
    assert k > 2 * c.k[prev + not_induction]


def test_heads_json_carries_the_composition_scores() -> None:
    """`heads CKPT --json`: composition.{q,k,v}[l1][h1][l2][h2], null where l1 >= l2, equal to
    composition_scores to 6 decimals; null for a seq2seq checkpoint."""
    payload = _heads_json("gpt-induction")["composition"]
    expected = composition_scores(load_checkpoint("gpt-induction", "cpu").model)
    assert sorted(payload) == ["k", "q", "v"]
    for name in "qkv":
        table = payload[name]
        assert [len(table), len(table[0]), len(table[0][0]), len(table[0][0][0])] == [2, 4, 2, 4]
        for l1, h1, l2, h2 in np.ndindex(2, 4, 2, 4):
            value = table[l1][h1][l2][h2]
            if l1 >= l2:
                assert value is None
            else:
                assert value == round(float(getattr(expected, name)[l1, h1, l2, h2]), 6)
    assert _heads_json("reverse-rope")["composition"] is None
