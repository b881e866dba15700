"""Export a GPT to TransformerLens: HookedTransformerConfig keyword arguments + weights in
HookedTransformer's parameter names, written as config.json and model.safetensors.

Why: so a researcher can continue in TransformerLens with its tools (hooks, activation
patching, its own head detector) on exactly our model; a test loads the export into
HookedTransformer and compares logits and detector scores.

The mapping is exact for pre-LN GPTs with LayerNorm or RMSNorm, ReLU or exact GELU (or no
MLP), and any of our position schemes:
- our token embedding is multiplied by sqrt(d_model) in the forward pass (unless the config's
  scale_embedding is False, as for imported GPT-2 / nanoGPT models): folded into W_E;
  the unembedding W_U is the tied matrix unscaled (lm_head.weight.T), b_U = 0;
- GELU's tanh approximation ("gelu_tanh") is TransformerLens's "gelu_new";
- sinusoidal positions become a fixed W_pos (the table), learned ones W_pos, none a zero W_pos;
- RoPE rotates adjacent pairs (2i, 2i+1) of every head dimension: rotary_adjacent_pairs=True,
  rotary_dim=d_head, base 10000;
- ALiBi uses Press et al.'s slopes, which TransformerLens computes the same way only for a
  power-of-two number of heads;
- LayerNorm eps 1e-5 (torch's default), RMSNorm eps 1e-6.
Post-LN blocks, SwiGLU (TransformerLens's gate has no bias), seq2seq models and ALiBi with a
head count that is not a power of two have no exact HookedTransformer form: ConfigError.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

from transformer_core.errors import ConfigError
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.layers import RMSNorm
from transformer_core.models import GPT, Seq2Seq

POSITIONAL_TYPE = {"learned": "standard", "sinusoidal": "standard", "none": "standard", "rope": "rotary"}
POSITIONAL_TYPE["alibi"] = "alibi"
ACT_FN = {"relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_new"}  # ours -> TransformerLens's act_fn


def check_exportable(model: GPT | Seq2Seq) -> None:
    """Raise ConfigError naming the first feature HookedTransformer cannot express exactly."""
    cfg = model.config
    if not isinstance(model, GPT) or cfg.arch != "gpt":
        raise ConfigError(
            f"export: only GPT (decoder-only) models map onto HookedTransformer; this is {cfg.arch}"
        )
    if cfg.norm_position != "pre":
        raise ConfigError("export: HookedTransformer blocks are pre-LN; this model is post-LN")
    if cfg.mlp and cfg.activation == "swiglu":
        raise ConfigError("export: SwiGLU has a gate bias here that HookedTransformer's gated MLP lacks")
    if cfg.positions not in POSITIONAL_TYPE:
        raise ConfigError(f"export: positions {cfg.positions!r} have no HookedTransformer form")
    if cfg.positions == "alibi" and cfg.n_heads & (cfg.n_heads - 1):
        raise ConfigError(
            f"export: ALiBi slopes for {cfg.n_heads} heads (not a power of two) differ from TransformerLens's"
        )


def hooked_config(model: GPT, name: str = "attention-lab") -> dict[str, Any]:
    """HookedTransformerConfig keyword arguments of an exportable GPT (plain JSON values)."""
    check_exportable(model)
    cfg = model.config
    out: dict[str, Any] = {
        "model_name": name,
        "n_layers": cfg.n_layers,
        "d_model": cfg.d_model,
        "d_head": cfg.d_head,
        "n_heads": cfg.n_heads,
        "n_ctx": cfg.max_len,
        "d_vocab": cfg.vocab_size,
        "attn_only": not cfg.mlp,
        "normalization_type": "LN" if cfg.norm == "layernorm" else "RMS",
        "eps": 1e-5 if cfg.norm == "layernorm" else 1e-6,
        "positional_embedding_type": POSITIONAL_TYPE[cfg.positions],
        "default_prepend_bos": False,
        "original_architecture": "attention-lab-gpt",
    }
    if cfg.mlp:
        out.update(d_mlp=cfg.d_ff, act_fn=ACT_FN[cfg.activation])  # "gelu" is exact GELU in both
    if cfg.positions == "rope":
        out.update(rotary_dim=cfg.d_head, rotary_adjacent_pairs=True, rotary_base=10000)
    return out


@torch.no_grad()
def hooked_state_dict(model: GPT) -> dict[str, torch.Tensor]:
    """Our weights under HookedTransformer's names and layouts (float32, contiguous).

    W_Q/W_K/W_V[h] (d_model, d_head) = rows h*d_head..(h+1)*d_head of in_proj's Q/K/V part,
    transposed; W_O[h] (d_head, d_model) = the matching columns of out_proj, transposed."""
    check_exportable(model)
    cfg = model.config
    d, H, dh = cfg.d_model, cfg.n_heads, cfg.d_head
    sd: dict[str, torch.Tensor] = {
        "embed.W_E": model.tok_emb.weight * math.sqrt(d) if cfg.scale_embedding else model.tok_emb.weight,
        "unembed.W_U": model.lm_head.weight.T,
        "unembed.b_U": torch.zeros(cfg.vocab_size),
    }
    if cfg.positions != "rope":  # HookedTransformer holds a W_pos for alibi too (unused: zeros)
        codes = model.position_codes(cfg.max_len)
        sd["pos_embed.W_pos"] = torch.zeros(cfg.max_len, d) if codes is None else codes

    def norm(prefix: str, module: torch.nn.Module) -> None:
        sd[f"{prefix}.w"] = module.weight
        if not isinstance(module, RMSNorm):
            sd[f"{prefix}.b"] = module.bias

    for i, block in enumerate(model.blocks):
        p = f"blocks.{i}"
        norm(f"{p}.ln1", block.norm_self)
        attn = block.self_attn
        w, b = attn.in_proj.weight, attn.in_proj.bias  # (3d, d), (3d,); a bias-free model exports zeros
        b = torch.zeros(3 * d) if b is None else b
        for j, name in enumerate("QKV"):
            wj = w[j * d : (j + 1) * d].view(H, dh, d)  # (H, d_head, d_model)
            sd[f"{p}.attn.W_{name}"] = wj.transpose(1, 2)
            sd[f"{p}.attn.b_{name}"] = b[j * d : (j + 1) * d].view(H, dh)
        sd[f"{p}.attn.W_O"] = attn.out_proj.weight.view(d, H, dh).permute(1, 2, 0)  # (H, d_head, d_model)
        sd[f"{p}.attn.b_O"] = torch.zeros(d) if attn.out_proj.bias is None else attn.out_proj.bias
        if cfg.mlp:
            norm(f"{p}.ln2", block.norm_ffn)
            sd[f"{p}.mlp.W_in"] = block.ffn.w1.weight.T
            sd[f"{p}.mlp.b_in"] = block.ffn.w1.bias
            sd[f"{p}.mlp.W_out"] = block.ffn.w2.weight.T
            sd[f"{p}.mlp.b_out"] = block.ffn.w2.bias
    if cfg.norm_position == "pre":
        norm("ln_final", model.final_norm)
    return {k: v.detach().float().cpu().contiguous().clone() for k, v in sd.items()}


def export_transformer_lens(
    model: GPT | Seq2Seq,
    out: str | Path,
    name: str = "attention-lab",
    vocab: list[str] | None = None,
    tokenizer: Tokenizer | None = None,
) -> Path:
    """Write out/config.json (HookedTransformerConfig kwargs), out/model.safetensors and, given
    the vocabulary (or a character tokenizer), out/vocab.json (id -> character) for
    `hf_char_tokenizer`; a BPE tokenizer writes its tokenizer.json instead.

    Load it with `load_hooked_transformer(out)` (needs transformer-lens>=3,<4), or by hand:
    HookedTransformer(HookedTransformerConfig(**config)).load_state_dict(weights, strict=False)."""
    check_exportable(model)
    assert isinstance(model, GPT)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    config = hooked_config(model, name)
    save_file(hooked_state_dict(model), str(folder / "model.safetensors"), metadata={"format": "pt"})
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    if tokenizer is not None and tokenizer.kind == "bpe":
        tokenizer.to_meta(folder)  # writes tokenizer.json
    elif tokenizer is not None:
        vocab = tokenizer.vocab
    if vocab is not None:
        (folder / "vocab.json").write_text(json.dumps(list(vocab), ensure_ascii=False) + "\n")
    return folder


def hf_char_tokenizer(vocab: list[str]) -> Any:
    """A Hugging Face fast tokenizer that maps each character to our id (unknown -> <unk>),
    so HookedTransformer's to_tokens / to_string and detect_head work on strings. No BOS:
    our GPTs never saw one. Needs the `tokenizers` and `transformers` packages."""
    from tokenizers import Regex, pre_tokenizers
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    unk = "<unk>" if "<unk>" in vocab else None  # nanoGPT's characters have none
    core = HFTokenizer(WordLevel({s: i for i, s in enumerate(vocab)}, unk_token=unk))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")  # one piece per char
    specials = {"unk_token": "<unk>", "pad_token": "<pad>", "eos_token": "<eos>"}  # those the vocabulary has
    return PreTrainedTokenizerFast(tokenizer_object=core, **{k: v for k, v in specials.items() if v in vocab})


def load_hooked_transformer(folder: str | Path, device: str = "cpu") -> Any:
    """A HookedTransformer with the exported weights (imports transformer_lens lazily; it is
    an optional dependency, see requirements-interop.txt). Only buffers may be missing."""
    from safetensors.torch import load_file
    from transformer_lens import HookedTransformer, HookedTransformerConfig

    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text())
    with warnings.catch_warnings():  # TransformerLens 3 announces its 4.0 bridge; 3 is what we target
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(HookedTransformerConfig(**config, device=device))
    missing, unexpected = model.load_state_dict(load_file(str(folder / "model.safetensors")), strict=False)
    params = {name for name, _ in model.named_parameters()}
    if unexpected or params & set(missing):
        raise ConfigError(
            f"export: weights do not fit HookedTransformer (missing {missing}, extra {unexpected})"
        )
    if (folder / "vocab.json").is_file():
        model.set_tokenizer(hf_char_tokenizer(json.loads((folder / "vocab.json").read_text())))
    return model.eval()
