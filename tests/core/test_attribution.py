"""Direct logit attribution: with every other direct term (embeddings, b_O, MLPs, the final
norm's bias) the heads' shares add up to the correct token's logit; the logit lens's probability
of the correct next token."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.config import ModelConfig
from transformer_core.errors import ConfigError, InputError
from transformer_core.interp.attribution import (
    apply_final_norm_to_stack,
    direct_logit_attribution,
    final_norm_scale,
    head_results,
    logit_directions,
)
from transformer_core.interp.lens import logit_lens
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.models import GPT


def _perturbed_gpt(**overrides) -> GPT:
    """A GPT whose norms and biases are all off their init, so no term vanishes by accident."""
    torch.manual_seed(0)
    fields = dict(vocab_size=24, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=20, positions="learned")
    model = GPT(ModelConfig(**{**fields, **overrides})).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


def other_direct_terms(model: GPT, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(the model's logit of each correct next token (T-1,), the direct share of everything that
    is not a head: embeddings + positions, each layer's b_O and MLP, final_norm.bias . W_U).
    Each block is rebuilt from its parts (stream + heads + b_O, then the MLP) and checked."""
    capture = AttentionCapture()
    with torch.no_grad():
        logits = model(torch.tensor([ids]), capture=capture)
        parts = [capture.residuals["self.0.resid_pre"]]
        for i, block in enumerate(model.blocks):
            attn = block.self_attn
            heads = head_results(capture[f"self.{i}"].z, attn.out_proj.weight).sum(1)  # (B, T, d)
            mid = capture.residuals[f"self.{i}.resid_pre"] + heads + attn.out_proj.bias
            mlp = block.ffn(block.norm_ffn(mid)) if block.ffn is not None else torch.zeros_like(mid)
            torch.testing.assert_close(
                mid + mlp, capture.residuals[f"self.{i}.resid_post"], atol=1e-5, rtol=1e-5
            )
            parts += [attn.out_proj.bias.expand_as(mid), mlp]
        resid = capture.residuals[f"self.{len(model.blocks) - 1}.resid_post"]
        scale = final_norm_scale(resid, model.final_norm)
        normed = apply_final_norm_to_stack(torch.stack(parts), scale, model.config.norm == "layernorm")
        targets = torch.tensor(ids[1:])
        directions = logit_directions(model, targets)  # (T-1, d)
        others = (normed[:, 0, :-1] * directions).sum(-1).sum(0)
        bias = getattr(model.final_norm, "bias", None)
        if bias is not None:
            others = others + model.lm_head.weight[targets] @ bias
    return logits[0, :-1].gather(-1, targets[:, None])[:, 0], others


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(lambda: _perturbed_gpt(), id="layernorm-gelu"),
        pytest.param(lambda: _perturbed_gpt(norm="rmsnorm", activation="relu"), id="rmsnorm-relu"),
        pytest.param(lambda: _perturbed_gpt(positions="rope", tie_weights=False), id="rope-untied"),
        pytest.param(lambda: load_checkpoint("gpt-induction").model, id="gpt-induction"),
    ],
)
def test_heads_and_the_other_direct_terms_add_up_to_the_correct_logit(model):
    model = model()
    ids = [5, 9, 4, 17, 6, 5, 9, 4, 17, 8, 11, 12]
    dla = direct_logit_attribution(model, ids)
    assert dla.per_position.shape == (model.config.n_layers, model.config.n_heads, len(ids) - 1)
    np.testing.assert_allclose(dla.heads, dla.per_position.mean(-1), rtol=1e-6)
    logit, others = other_direct_terms(model, ids)
    total = torch.from_numpy(dla.per_position).sum((0, 1)) + others
    torch.testing.assert_close(total, logit, atol=1e-4, rtol=0)
    assert np.abs(dla.per_position).max() > 0.01  # the heads do contribute


def test_attribution_refuses_what_it_cannot_read(make_gpt, make_seq2seq):
    with pytest.raises(ConfigError, match="pre-LN GPT"):
        direct_logit_attribution(make_gpt(norm_position="post"), [4, 5, 6])
    with pytest.raises(ConfigError, match="pre-LN GPT"):
        direct_logit_attribution(make_seq2seq(), [4, 5, 6])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="two tokens"):
        direct_logit_attribution(make_gpt(), [4])


def test_logit_lens_correct_probs_last_row_is_the_models_softmax():
    ckpt = load_checkpoint("gpt-induction")
    ids = ckpt.tokenizer.encode("abcdefabcdef")
    lens = logit_lens(ckpt.model, ckpt.tokenizer, ids)
    assert lens.correct_probs.shape == (ckpt.config.n_layers + 1, len(ids))
    assert np.isnan(lens.correct_probs[:, -1]).all() and not np.isnan(lens.correct_probs[:, :-1]).any()
    with torch.no_grad():
        probs = torch.softmax(ckpt.model(torch.tensor([ids]))[0].float(), -1)
    expected = probs[torch.arange(len(ids) - 1), torch.tensor(ids[1:])].numpy()
    np.testing.assert_allclose(lens.correct_probs[-1, :-1], expected, atol=1e-6)
    assert (
        lens.correct_probs[-1, 7:-1].mean() > lens.correct_probs[0, 7:-1].mean()
    )  # induction needs the layers
