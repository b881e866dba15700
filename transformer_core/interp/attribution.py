"""Direct logit attribution per head (Elhage et al. 2021; TransformerLens's
`cache.stack_head_results(layer=-1, apply_ln=True)` dotted with `tokens_to_residual_directions`).

Why: the final residual stream is a sum of what each component wrote into it, and the final
LayerNorm is linear once its scale is frozen, so every head's output has a direct share of the
correct next character's logit (its effect through later layers is not counted: "direct").

Convention (that of TransformerLens on a model loaded with fold_ln=True): head h of layer l
writes result = z_h W_O^h (no b_O); the final norm's scale is computed once from the full
residual stream at each position, sqrt(var + eps) for LayerNorm (and each component is centred,
x - mean(x)), sqrt(mean(x^2) + eps) for RMSNorm (no centring); the direction of token t is
final_norm.weight * W_U[:, t]. Then, summed over every component (embeddings with positions,
head results, b_O of each layer, MLP outputs), the attributions plus final_norm.bias . W_U[:, t]
give exactly the logit of t. Our export does not fold the norm into W_U, so an exported
HookedTransformer's `tokens_to_residual_directions` lacks the factor final_norm.weight.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from transformer_core.capture import AttentionCapture
from transformer_core.errors import ConfigError, InputError
from transformer_core.layers import RMSNorm
from transformer_core.models import GPT, Seq2Seq


@dataclass(frozen=True)
class Attribution:
    """Direct logit attribution of one input of T tokens. targets (T-1,): the correct next ids
    (position t predicts ids[t+1]); per_position (L, H, T-1); heads (L, H): its mean over positions."""

    targets: list[int]
    per_position: np.ndarray
    heads: np.ndarray


def head_results(z: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """Each head's write into the residual stream, before b_O: z (B, H, T, d_head) and the output
    projection's weight W_O (d_model, H * d_head) -> (B, H, T, d_model), z_h W_O^h."""
    B, H, T, d_head = z.shape
    return torch.einsum("bhtd,mhd->bhtm", z, w_o.view(-1, H, d_head))


def final_norm_scale(resid: torch.Tensor, norm: nn.Module) -> torch.Tensor:
    """The final norm's divisor of the full residual stream (B, T, d_model) -> (B, T, 1):
    sqrt(var + eps) for LayerNorm, sqrt(mean(x^2) + eps) for RMSNorm."""
    if isinstance(norm, RMSNorm):
        return (resid.pow(2).mean(-1, keepdim=True) + norm.eps).sqrt()
    if isinstance(norm, nn.LayerNorm):
        return (resid.var(-1, unbiased=False, keepdim=True) + norm.eps).sqrt()
    raise ConfigError(f"direct logit attribution: no scale for a final norm of type {type(norm).__name__}")


def apply_final_norm_to_stack(stack: torch.Tensor, scale: torch.Tensor, centre: bool) -> torch.Tensor:
    """Components (..., B, T, d_model) as the final norm sees them with its scale frozen:
    centred (LayerNorm) and divided by scale (B, T, 1) of the full stream."""
    if centre:
        stack = stack - stack.mean(-1, keepdim=True)
    return stack / scale


def logit_directions(model: GPT, tokens: torch.Tensor) -> torch.Tensor:
    """Residual directions of tokens (...) -> (..., d_model): final_norm.weight * W_U[:, t], so
    that normed_component . direction is the component's share of logit t."""
    return model.lm_head.weight[tokens] * model.final_norm.weight


def check_attributable(model: GPT) -> None:
    """DLA reads a pre-LN GPT: the final norm is the only map between the stream and W_U."""
    if not isinstance(model, GPT) or model.config.norm_position != "pre":
        raise ConfigError(
            "direct logit attribution needs a pre-LN GPT (one final norm before the unembedding)"
        )


@torch.no_grad()
def direct_logit_attribution(model: GPT, ids: list[int]) -> Attribution:
    """Every head's direct share of the correct next token's logit at each position of ids."""
    check_attributable(model)
    if len(ids) < 2:
        raise InputError("direct logit attribution needs at least two tokens (one to predict)")
    device = next(model.parameters()).device
    capture = AttentionCapture()
    model(torch.tensor([ids], device=device), capture=capture)
    n = model.config.n_layers
    scale = final_norm_scale(capture.residuals[f"self.{n - 1}.resid_post"], model.final_norm)
    results = torch.stack(  # (L, B, H, T, d_model)
        [head_results(capture[f"self.{i}"].z, model.blocks[i].self_attn.out_proj.weight) for i in range(n)]
    )
    normed = apply_final_norm_to_stack(results.transpose(1, 2), scale, model.config.norm == "layernorm")
    targets = torch.tensor(ids[1:], device=device)
    per_position = (normed[:, :, 0, :-1] * logit_directions(model, targets)).sum(-1)  # (L, H, T-1)
    values = per_position.float().cpu().numpy()
    return Attribution(targets=list(ids[1:]), per_position=values, heads=values.mean(-1))


def value_weighted(weights: torch.Tensor, v: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """||alpha_ij v_j W_O^h||, what key j actually sends query i through head h (Kobayashi et al.
    2020, "attention is not only a weight"): weights (B, H, Tq, Tk), v (B, H, Tk, d_head) and
    W_O (d_model, H * d_head) -> (B, H, Tq, Tk). A large weight on a key whose value the head
    maps to almost nothing sends almost nothing."""
    sent = head_results(v, w_o).norm(dim=-1)  # (B, H, Tk): ||v_j W_O^h||
    return weights * sent[:, :, None, :]


@torch.no_grad()
def weighted_attention(model: nn.Module, capture: AttentionCapture) -> dict[str, np.ndarray]:
    """Every captured kind's value-weighted attention (L, H, Tq, Tk), batch row 0, beside the
    trace's "attention": the output projection of each layer read from the model."""
    if not isinstance(model, GPT | Seq2Seq):
        raise ConfigError("value-weighted attention needs Transformer heads (an output projection W_O)")
    modules = {"self": "blocks", "encoder_self": "encoder", "decoder_self": "decoder", "cross": "decoder"}
    out = {}
    for kind in capture.kinds():
        blocks = getattr(model, modules[kind])
        layers = sorted((r for r in capture.records if r.kind == kind), key=lambda r: r.layer)
        per_layer = []
        for r in layers:
            attn = blocks[r.layer].cross_attn if kind == "cross" else blocks[r.layer].self_attn
            per_layer.append(value_weighted(r.weights[:1], r.v[:1], attn.out_proj.weight)[0])
        stacked = torch.stack(per_layer)  # (L, H, Tq, Tk)
        out[kind] = stacked.float().cpu().numpy()
    return out


def sent_shares(weights: np.ndarray, v: np.ndarray, w_o: np.ndarray) -> np.ndarray:
    """Each key's share of what a query receives, by norm: ||alpha_ij v_j W_O^h|| / sum over j,
    per head and query (0 for a row that receives nothing). weights (H, Tq, Tk), v (H, Tk, d_head),
    W_O (d_model, H * d_head) -> (H, Tq, Tk) in [0, 1], drawn like attention weights."""
    H, _, d_head = v.shape
    per_head = w_o.reshape(w_o.shape[0], H, d_head)  # (d_model, H, d_head)
    sent = np.linalg.norm(np.einsum("hkd,mhd->hkm", v, per_head), axis=-1)  # (H, Tk)
    return row_shares(weights * sent[:, None, :])


def row_shares(weighted: np.ndarray) -> np.ndarray:
    """Value-weighted attention (..., Tq, Tk) as each key's share of its row (0 for a row that
    receives nothing): drawn on the same [0, 1] scale as attention weights."""
    total = weighted.sum(-1, keepdims=True)
    return np.divide(weighted, total, out=np.zeros_like(weighted), where=total > 0)
