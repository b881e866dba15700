"""Q-, K- and V-composition between attention heads of a GPT (Elhage et al. 2021, "A
Mathematical Framework for Transformer Circuits"): how much an earlier head's output can
steer a later head's queries, keys or values, read from the weights alone (no data).

Why: an induction circuit shows up as K-composition from a previous-token head into the
induction head; the score finds such pairs without running a prompt.

Convention: exactly TransformerLens's `HookedTransformer.all_composition_scores(mode)` on
the model as `export_transformer_lens` / `load_hooked_transformer` give it. Our exporter
builds `HookedTransformer(cfg)` and loads the weights as they are (no `from_pretrained`,
no `process_weights`), so:
- no LayerNorm / RMSNorm weight is folded into W_Q, W_K, W_V (ln1) or anywhere else;
- no centring of the residual stream (W_O and the embeddings are not mean-centred);
- biases (b_Q, b_K, b_V, b_O) are ignored: the circuits are the linear maps only;
- row-vector layout: W_Q/W_K/W_V[l, h] (d_model, d_head), W_O[l, h] (d_head, d_model),
  OV = W_V W_O and QK = W_Q W_K^T, both (d_model, d_model) acting as x @ M.
We keep that convention (rather than the paper's folded, centred one) so a researcher who
continues in TransformerLens on our export gets our numbers, and a test checks that.

Scores, for an earlier head 1 and a later head 2 (l1 < l2):
    Q: |OV_1 QK_2|     K: |OV_1 QK_2^T|     V: |OV_1 OV_2|     each / (|OV_1| |right|),
with |.| the Frobenius norm; in [0, 1] by submultiplicativity. TransformerLens puts 0 where
l1 >= l2; we put NaN (JSON null): a head cannot compose with one in its own or a later layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from transformer_core.errors import ConfigError
from transformer_core.models import GPT


@dataclass(frozen=True)
class HeadWeights:
    """Every self-attention head's projections in TransformerLens's layout, float64.

    w_q, w_k, w_v: (L, H, d_model, d_head); w_o: (L, H, d_head, d_model)."""

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray


@dataclass(frozen=True)
class Circuit:
    """A low-rank matrix M = a @ b per head, kept factored (like TransformerLens's
    FactoredMatrix) so scores cost (d_head x d_head) products, not (d_model x d_model) ones.

    a: (..., d_model, d_head), b: (..., d_head, d_model); M: (..., d_model, d_model)."""

    a: np.ndarray
    b: np.ndarray

    @property
    def matrix(self) -> np.ndarray:
        """The product a @ b (..., d_model, d_model)."""
        return self.a @ self.b

    @property
    def T(self) -> Circuit:
        """M^T = b^T a^T, still factored."""
        return Circuit(np.swapaxes(self.b, -1, -2), np.swapaxes(self.a, -1, -2))

    def collapse_left(self) -> np.ndarray:
        """C (..., d_head, d_model) with M = Q C, Q orthonormal columns (a = Q R, C = R b):
        |M X| = |C X| for any X, so M may stand on the left of a product as C."""
        _, r = np.linalg.qr(self.a)
        return r @ self.b

    def collapse_right(self) -> np.ndarray:
        """C (..., d_model, d_head) with M = C Q^T, Q orthonormal columns (b^T = Q R, C = a R^T):
        |X M| = |X C| for any X, so M may stand on the right of a product as C."""
        _, r = np.linalg.qr(np.swapaxes(self.b, -1, -2))
        return self.a @ np.swapaxes(r, -1, -2)


@dataclass(frozen=True)
class Composition:
    """Q-, K- and V-composition scores, each (L, H, L, H) indexed [l1, h1, l2, h2]: earlier
    head (l1, h1) writing into later head (l2, h2); NaN where l1 >= l2."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray


def head_weights(model: GPT) -> HeadWeights:
    """W_Q, W_K, W_V, W_O of every self-attention head, split out of in_proj / out_proj
    exactly as `export_tl.hooked_state_dict` does (float64 on the CPU)."""
    if not isinstance(model, GPT) or model.config.arch != "gpt":
        raise ConfigError("composition: defined for GPT (decoder-only) models; this is seq2seq")
    cfg = model.config
    d, n_heads, d_head = cfg.d_model, cfg.n_heads, cfg.d_head
    q, k, v, o = [], [], [], []
    with torch.no_grad():
        for block in model.blocks:
            attn = block.self_attn
            w = attn.in_proj.weight.detach().double().cpu().view(3, n_heads, d_head, d)
            q.append(w[0].transpose(1, 2))
            k.append(w[1].transpose(1, 2))
            v.append(w[2].transpose(1, 2))
            o.append(attn.out_proj.weight.detach().double().cpu().view(d, n_heads, d_head).permute(1, 2, 0))
    return HeadWeights(*(torch.stack(x).numpy() for x in (q, k, v, o)))


def ov_circuits(model: GPT) -> Circuit:
    """OV = W_V W_O per head (L, H, d_model, d_model): what a head writes for what it reads."""
    w = head_weights(model)
    return Circuit(w.w_v, w.w_o)


def qk_circuits(model: GPT) -> Circuit:
    """QK = W_Q W_K^T per head (L, H, d_model, d_model): the bilinear form x_q QK x_k^T of
    the attention logits (scale and positions aside)."""
    w = head_weights(model)
    return Circuit(w.w_q, np.swapaxes(w.w_k, -1, -2))


def composition_score(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """|L R|_F / (|L|_F |R|_F) over the last two axes, leading axes broadcast: the share of
    R's input that L's output can reach. L (..., m, n), R (..., n, p) -> (...)."""
    num = np.linalg.norm(left @ right, axis=(-2, -1))
    return num / (np.linalg.norm(left, axis=(-2, -1)) * np.linalg.norm(right, axis=(-2, -1)))


def _pairwise(left: Circuit, right: Circuit) -> np.ndarray:
    """composition_score of every left head (l1, h1) with every right head (l2, h2), on the
    collapsed factors (same value, d_head-sized products); (L, H, L, H), NaN where l1 >= l2."""
    lc = left.collapse_left()[:, :, None, None]  # (L, H, 1, 1, d_head, d_model)
    rc = right.collapse_right()[None, None]  # (1, 1, L, H, d_model, d_head)
    scores = composition_score(lc, rc)
    n_layers = scores.shape[0]
    later = np.arange(n_layers)[:, None, None, None] < np.arange(n_layers)[None, None, :, None]
    return np.where(np.broadcast_to(later, scores.shape), scores, np.nan)


def composition_scores(model: GPT) -> Composition:
    """Q-, K- and V-composition of every earlier head into every later head (l1 < l2), in
    TransformerLens's convention (module docstring); each (L, H, L, H), NaN where l1 >= l2."""
    ov, qk = ov_circuits(model), qk_circuits(model)
    return Composition(q=_pairwise(ov, qk), k=_pairwise(ov, qk.T), v=_pairwise(ov, ov))
