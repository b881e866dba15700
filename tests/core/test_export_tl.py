"""TransformerLens export: the exported HookedTransformer computes our logits (<= 1e-4) and
TransformerLens's own detect_head gives our head-detector scores on the same prompts.

transformer-lens (>=3,<4, requirements-interop.txt) is optional for the app; the session
fixture installs it with pip when it is missing, so this test always runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.optional import installed
from transformer_core.capture import AttentionCapture
from transformer_core.config import ModelConfig
from transformer_core.errors import ConfigError
from transformer_core.interp.composition import composition_scores
from transformer_core.interp.heads import (
    duplicate_token_template,
    induction_template,
    previous_token_template,
    template_score,
)
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.export_tl import export_transformer_lens, hooked_config, load_hooked_transformer
from transformer_core.models import GPT

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def transformer_lens(tmp_path_factory):
    """The transformer_lens module, pip-installed from requirements-interop.txt if missing
    (pinned to the torch already installed, so pip never swaps torch)."""
    return installed("transformer_lens", "requirements-interop.txt", tmp_path_factory)


def _perturbed_gpt(positions: str, **overrides) -> GPT:
    """A small GPT with every weight (norms and biases included) moved off its init."""
    torch.manual_seed(0)
    fields = dict(vocab_size=24, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=20, positions=positions)
    model = GPT(ModelConfig(**{**fields, **overrides})).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope", "alibi", "none"])
@pytest.mark.parametrize(
    "overrides", [{}, {"mlp": False}, {"activation": "relu", "norm": "rmsnorm"}], ids=["gelu", "attn", "relu"]
)
def test_export_logits_equal_ours(transformer_lens, tmp_path, positions, overrides):
    model = _perturbed_gpt(positions, **overrides)
    export_transformer_lens(model, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    if model.config.mlp:
        assert config["act_fn"] == model.config.activation and config["d_mlp"] == 64
    else:
        assert config["attn_only"] is True
    hooked = load_hooked_transformer(tmp_path)
    assert isinstance(hooked, transformer_lens.HookedTransformer)
    ids = torch.randint(0, 24, (3, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours, theirs = model(ids), hooked(ids)
    assert (ours - theirs).abs().max().item() <= 1e-4
    _, cache = hooked.run_with_cache(ids[:1])
    capture = AttentionCapture()
    with torch.no_grad():
        model(ids[:1], capture=capture)
    for layer in range(2):
        torch.testing.assert_close(
            cache["pattern", layer][0], capture[f"self.{layer}"].weights[0], atol=1e-5, rtol=0
        )


def test_shipped_gpt_export_via_cli_matches_logits_and_detect_head(transformer_lens, tmp_path):
    from transformer_lens.head_detector import detect_head

    out = subprocess.run(
        [sys.executable, "-m", "transformer_core", "export", "gpt-learned", "--format", "transformer-lens"]
        + ["--out", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out)["files"] == ["config.json", "model.safetensors", "vocab.json"]
    hooked = load_hooked_transformer(tmp_path)
    ckpt = load_checkpoint("gpt-learned")
    prompts = ["The return statement", "def f(x): return x + x", "the cat sat on the mat"]
    for text in prompts:
        ids = ckpt.tokenizer.encode(text)
        assert hooked.to_tokens(text)[0].tolist() == ids
        with torch.no_grad():
            ours = ckpt.model(torch.tensor([ids]))
            assert (ours - hooked(torch.tensor([ids]))).abs().max().item() <= 1e-4
        capture = AttentionCapture()
        with torch.no_grad():
            ckpt.model(torch.tensor([ids]), capture=capture)
        weights = capture.weights("self").numpy()  # (L, H, T, T)
        for name, template in [
            ("previous_token_head", previous_token_template(len(ids))),
            ("duplicate_token_head", duplicate_token_template(ids)),
            ("induction_head", induction_template(ids)),
        ]:
            theirs = detect_head(hooked, text, name).numpy()
            ours_scores = template_score(weights, template, rows="all")  # detect_head counts every row
            np.testing.assert_allclose(ours_scores, theirs, atol=1e-5, err_msg=name)


def test_unexpressible_configs_get_a_clear_error(make_seq2seq):
    with pytest.raises(ConfigError, match="seq2seq"):
        hooked_config(make_seq2seq())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="post-LN"):
        hooked_config(_perturbed_gpt("rope", norm_position="post"))
    with pytest.raises(ConfigError, match="SwiGLU"):
        hooked_config(_perturbed_gpt("rope", activation="swiglu"))
    with pytest.raises(ConfigError, match="power of two"):
        hooked_config(_perturbed_gpt("alibi", n_heads=6, d_model=48))
    assert hooked_config(_perturbed_gpt("alibi", n_heads=8))["positional_embedding_type"] == "alibi"


def test_export_cli_refuses_a_reversal_model(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "transformer_core", "export", "reverse-rope", "--format", "transformer-lens"]
        + ["--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "seq2seq" in done.stderr


@pytest.mark.parametrize("source", ["gpt-learned", "gpt-induction", "perturbed"])
def test_composition_scores_equal_transformer_lens(transformer_lens, tmp_path, source):
    """Our Q/K/V composition equals HookedTransformer.all_composition_scores on the export
    (unfolded LN, no centring, no biases) within 1e-4 where l1 < l2 (measured: <= 5e-7);
    where TransformerLens writes 0 (l1 >= l2) ours is NaN."""
    model = _perturbed_gpt("rope") if source == "perturbed" else load_checkpoint(source, "cpu").model
    export_transformer_lens(model, tmp_path)
    hooked = load_hooked_transformer(tmp_path)
    ours = composition_scores(model)
    pairs = model.config.n_layers * (model.config.n_layers - 1) // 2 * model.config.n_heads**2
    for mode in "QKV":
        theirs = hooked.all_composition_scores(mode).detach().numpy()
        mine = getattr(ours, mode.lower())
        defined = ~np.isnan(mine)
        assert defined.sum() == pairs
        np.testing.assert_allclose(mine[defined], theirs[defined], atol=1e-4, rtol=0, err_msg=mode)
        assert (theirs[~defined] == 0).all()


# (clean, corrupted, answer, wrong) per shipped GPT: a loss metric on the Python-docs model,
# a logit difference on the repeated segment of the induction model
PATCHING_CASES = {
    "gpt-learned": ("def f(x): return x + x", "def g(y): return y * y", None, None),
    "gpt-induction": ("abcdefghijabcdefghi", "abcdefghijklmnopqrs", "j", "s"),
}


@pytest.mark.parametrize("name", list(PATCHING_CASES))
def test_head_patching_equals_transformer_lens(transformer_lens, tmp_path, name):
    """Our per-head patching map equals get_act_patch_attn_head_out_all_pos (hook_z, every
    position) with the same metric on the export, within 1e-4."""
    from transformer_lens.patching import get_act_patch_attn_head_out_all_pos

    from transformer_core.interp.patching import Contrast, activation_patching, patching_run

    ckpt = load_checkpoint(name, "cpu")
    export_transformer_lens(ckpt.model, tmp_path)
    hooked = load_hooked_transformer(tmp_path)
    clean, corrupted, answer, wrong = PATCHING_CASES[name]
    ours = activation_patching(ckpt.model, ckpt.tokenizer, clean, corrupted, answer, wrong)
    run = patching_run(ckpt.model, ckpt.tokenizer, Contrast(clean, corrupted, answer, wrong))
    with torch.no_grad():
        _, clean_cache = hooked.run_with_cache(run.clean[0])
        theirs = get_act_patch_attn_head_out_all_pos(hooked, run.corrupted[0], clean_cache, run.metric)
        assert float(run.metric(hooked(run.corrupted[0]))) == pytest.approx(ours.corrupted, abs=1e-4)
    np.testing.assert_allclose(ours.heads["self"], theirs.numpy(), atol=1e-4, rtol=0)
    assert np.ptp(ours.heads["self"]) > 0.05  # the heads differ: the comparison has something to compare


@pytest.mark.parametrize("name", ["gpt-learned", "gpt-induction"])
def test_direct_logit_attribution_equals_transformer_lens(transformer_lens, tmp_path, name):
    """Our DLA per head and position equals cache.stack_head_results(layer=-1, apply_ln=True)
    dotted with tokens_to_residual_directions within 1e-4. The export does not fold the final
    LayerNorm into W_U, so TransformerLens's directions get the factor ln_final.w (what fold_ln does)."""
    from transformer_core.interp.attribution import direct_logit_attribution

    ckpt = load_checkpoint(name, "cpu")
    export_transformer_lens(ckpt.model, tmp_path)
    hooked = load_hooked_transformer(tmp_path)
    ids = ckpt.tokenizer.encode("def f(x): return x + x" if name == "gpt-learned" else "abcdefghijabcdefghij")
    ours = direct_logit_attribution(ckpt.model, ids)
    tokens = torch.tensor([ids])
    with torch.no_grad():
        _, cache = hooked.run_with_cache(tokens)
        stack = cache.stack_head_results(layer=-1, pos_slice=slice(0, -1), apply_ln=True)  # (L*H, 1, T-1, d)
        directions = hooked.tokens_to_residual_directions(tokens[0, 1:]) * hooked.ln_final.w  # (T-1, d)
        theirs = (stack[:, 0] * directions).sum(-1).view(*ours.heads.shape, -1)
    np.testing.assert_allclose(ours.per_position, theirs.numpy(), atol=1e-4, rtol=0)
    assert np.abs(ours.heads).max() > 0.1


@pytest.mark.parametrize("positions", ["learned", "none"])
def test_the_score_split_equals_transformer_lens_residual_decomposition(
    transformer_lens, tmp_path, positions
):
    """Issue 40's QK attribution against TransformerLens's own cache of the exported model: its
    residual parts at layer 1 (hook_embed, hook_pos_embed, each layer-0 head's result, b_O, mlp_out)
    through ln1 with its hook_scale frozen, then W_Q and W_K of one head, give our contributions."""
    from transformer_core.interp.decompose import decompose_scores

    model = _perturbed_gpt(positions)
    export_transformer_lens(model, tmp_path)
    hooked = load_hooked_transformer(tmp_path)
    ids = torch.randint(0, 24, (1, 12), generator=torch.Generator().manual_seed(2))
    capture = AttentionCapture()
    with torch.no_grad():
        model(ids, capture=capture)
        _, cache = hooked.run_with_cache(ids)
    layer, head, query = 1, 2, 9
    ours = decompose_scores(model, capture, "self", layer, head, query)
    results = cache.stack_head_results(layer=layer)[:, 0]  # (heads of earlier layers, T, d_model)
    parts = [cache["hook_embed"][0]]
    if positions == "learned":
        parts.append(cache["hook_pos_embed"][0])
    parts += [*results, cache["mlp_out", 0][0]]
    block = hooked.blocks[layer]
    bias = hooked.blocks[0].attn.b_O.expand_as(parts[0])
    stack = torch.stack([*parts, bias])  # (P, T, d_model), ours: embed, pos, L0H0.., MLP0, bias
    scale = cache[f"blocks.{layer}.ln1.hook_scale"][0]  # (T, 1)
    normed = (stack - stack.mean(-1, keepdim=True)) / scale * block.ln1.w
    normed[-1] += block.ln1.b
    q = normed[:, query] @ block.attn.W_Q[head]  # (P, d_head)
    k = normed @ block.attn.W_K[head]  # (P, T, d_head)
    q[-1] += block.attn.b_Q[head]
    k[-1] += block.attn.b_K[head]
    theirs = torch.einsum("ad,bkd->kab", q, k) / block.attn.attn_scale  # (T, Pq, Pk)
    order = ours.query_parts
    assert order[-2:] == ["MLP0", "bias"] and len(order) == len(parts) + 1
    np.testing.assert_allclose(ours.contributions, theirs.detach().numpy(), atol=1e-4)
    torch.testing.assert_close(
        torch.tensor(ours.contributions.sum((1, 2)))[: query + 1],
        cache["attn_scores", layer][0, head, query, : query + 1],
        atol=1e-4,
        rtol=0,
    )
