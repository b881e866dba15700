"""Import the folder `export_tl` writes (HookedTransformerConfig kwargs in config.json,
HookedTransformer weights in model.safetensors): the export's inverse, a round trip back to
an equal checkpoint.

Why it can be exact: the export folds nothing irreversible. W_E is our embedding, times
sqrt(d_model) when the model scales it (recognised bit for bit against W_U, else the two are
imported untied); a sinusoidal W_pos is recognised as the table, zeros as no positions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from transformer_core.errors import CheckpointError
from transformer_core.io.checkpoint import check_parameter_count, safetensors_parameter_count
from transformer_core.io.importers.common import Imported, gpt_config, read_json, sqrt_scaled
from transformer_core.io.tokenizer import SPECIAL_TOKENS, CharTokenizer, Tokenizer
from transformer_core.io.tokenizers import BPE_FILE, BPETokenizer, PlainCharTokenizer
from transformer_core.positional import sinusoidal_positional_encoding

ACT_FN = {"relu": "relu", "gelu": "gelu", "gelu_new": "gelu_tanh"}  # TransformerLens's -> ours
NORMS = {"LN": ("layernorm", 1e-5), "RMS": ("rmsnorm", 1e-6)}  # -> ours and the eps we compute with
#: config fields that change HookedTransformer's computation, and the value we compute exactly
MUST_BE: dict[str, Any] = {
    "use_attn_scale": True,
    "gated_mlp": False,
    "parallel_attn_mlp": False,
    "final_rms": False,
    "use_local_attn": False,
    "n_key_value_heads": None,
    "use_normalization_before_and_after": False,
    "attn_scores_soft_cap": -1.0,
    "output_logits_soft_cap": -1.0,
}
#: HookedTransformerConfig's shape fields -> ours
SHAPE = {
    "d_vocab": "vocab_size",
    "d_model": "d_model",
    "n_heads": "n_heads",
    "n_layers": "n_layers",
    "n_ctx": "max_len",
}
BUFFERS = ("IGNORE", "mask", "rotary_sin", "rotary_cos")  # HookedTransformer buffers, not weights


def _positions(cfg: dict[str, Any], what: str) -> str:
    kind = cfg.get("positional_embedding_type", "standard")
    if kind == "rotary":
        rope = (cfg.get("rotary_adjacent_pairs"), cfg.get("rotary_dim"), cfg.get("rotary_base", 10000))
        if rope != (True, cfg["d_head"], 10000):
            raise CheckpointError(
                f"{what}: rotary (adjacent_pairs, dim, base) = {rope}; we rotate adjacent pairs of the "
                f"whole head, base 10000: (True, {cfg['d_head']}, 10000)"
            )
        return "rope"
    if kind not in ("standard", "alibi"):
        raise CheckpointError(f"{what}: positional_embedding_type {kind!r} has no form here")
    return "learned" if kind == "standard" else "alibi"  # standard: refined from W_pos below


def check_config(cfg: dict[str, Any], what: str) -> tuple[str, str]:
    """(norm, activation) of ours for a HookedTransformer config; CheckpointError naming what differs."""
    for key, value in MUST_BE.items():
        if cfg.get(key, value) != value:
            raise CheckpointError(f"{what}: {key}={cfg[key]!r} is not supported (we compute {key}={value!r})")
    norm = cfg.get("normalization_type", "LN")
    if norm not in NORMS or cfg.get("eps", NORMS[norm][1]) != NORMS[norm][1]:
        raise CheckpointError(
            f"{what}: normalization_type {norm!r} with eps {cfg.get('eps')} is not LN (1e-5) or RMS (1e-6)"
        )
    act = cfg.get("act_fn", "relu") if not cfg.get("attn_only") else "relu"
    if act not in ACT_FN:
        raise CheckpointError(f"{what}: act_fn {act!r} is not one we compute exactly ({sorted(ACT_FN)})")
    if cfg["d_head"] * cfg["n_heads"] != cfg["d_model"]:
        raise CheckpointError(f"{what}: d_head * n_heads != d_model: heads must split the model width")
    return NORMS[norm][0], ACT_FN[act]


def _refine_positions(positions: str, w_pos: torch.Tensor | None) -> str:
    """learned -> sinusoidal when W_pos is exactly the table, none when it is all zeros."""
    if positions != "learned" or w_pos is None:
        return positions
    if not torch.any(w_pos):
        return "none"
    table = sinusoidal_positional_encoding(w_pos.size(0), w_pos.size(1))
    return "sinusoidal" if torch.equal(w_pos, table.to(w_pos.dtype)) else "learned"


def tl_tokenizer(folder: Path, tokenizer: Path | None, vocab_size: int) -> Tokenizer:
    """vocab.json (ours: specials first -> char; else one character per id) or a BPE tokenizer.json."""
    if tokenizer is None and (folder / "vocab.json").is_file():
        vocab = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
        if not isinstance(vocab, list):
            raise CheckpointError(f"{folder / 'vocab.json'}: not a list of tokens")
        if tuple(vocab[: len(SPECIAL_TOKENS)]) == SPECIAL_TOKENS:
            return CharTokenizer.from_vocab(vocab)
        return PlainCharTokenizer(vocab)
    path = tokenizer or folder / BPE_FILE
    if not path.is_file():
        raise CheckpointError(f"transformer-lens: {folder} has no vocab.json or {BPE_FILE}; pass --tokenizer")
    return BPETokenizer.from_file(path, vocab_size)


def _embeddings(sd: dict[str, torch.Tensor], d: int) -> tuple[dict[str, torch.Tensor], bool, bool]:
    """(weights, tied, scaled): W_E and W_U as one tied matrix when they are (scaled or not)."""
    w_e, w_u = sd.pop("embed.W_E"), sd.pop("unembed.W_U").T.contiguous()
    b_u = sd.pop("unembed.b_U", None)
    if b_u is not None and torch.any(b_u):
        raise CheckpointError("transformer-lens: unembed.b_U is not zero; our LM head has no bias")
    if torch.equal(w_e, w_u):
        return {"tok_emb.weight": w_u, "lm_head.weight": w_u}, True, False
    if sqrt_scaled(w_e, w_u, d):
        return {"tok_emb.weight": w_u, "lm_head.weight": w_u}, True, True
    return {"tok_emb.weight": w_e, "lm_head.weight": w_u}, False, False


def _block(sd: dict[str, torch.Tensor], i: int, cfg: dict[str, Any], mlp: bool) -> dict[str, torch.Tensor]:
    """Block i's weights under our names: W_Q/K/V (H, d, dh) stacked into in_proj (3d, d)."""
    p, q, d = f"blocks.{i}", f"blocks.{i}.", cfg["d_model"]
    out: dict[str, torch.Tensor] = {}
    norms = [("ln1", "norm_self")] + ([("ln2", "norm_ffn")] if mlp else [])
    for theirs, ours in norms:
        out[f"{q}{ours}.weight"] = sd.pop(f"{p}.{theirs}.w")
        if f"{p}.{theirs}.b" in sd:
            out[f"{q}{ours}.bias"] = sd.pop(f"{p}.{theirs}.b")
    w = [sd.pop(f"{p}.attn.W_{n}").permute(0, 2, 1).reshape(d, d) for n in "QKV"]  # (H*dh, d) each
    out[f"{q}self_attn.in_proj.weight"] = torch.cat(w)
    out[f"{q}self_attn.in_proj.bias"] = torch.cat([sd.pop(f"{p}.attn.b_{n}").reshape(d) for n in "QKV"])
    out[f"{q}self_attn.out_proj.weight"] = sd.pop(f"{p}.attn.W_O").permute(2, 0, 1).reshape(d, d)
    out[f"{q}self_attn.out_proj.bias"] = sd.pop(f"{p}.attn.b_O")
    if mlp:
        for ours, theirs in (("w1", "in"), ("w2", "out")):
            out[f"{q}ffn.{ours}.weight"] = sd.pop(f"{p}.mlp.W_{theirs}").T
            out[f"{q}ffn.{ours}.bias"] = sd.pop(f"{p}.mlp.b_{theirs}")
    return out


def tl_weights(sd: dict[str, torch.Tensor], cfg: dict[str, Any], what: str) -> tuple[dict, bool, bool]:
    """HookedTransformer state dict -> (our state dict, tied, scaled); leftovers refused by name."""
    sd = {k: v for k, v in sd.items() if k.rsplit(".", 1)[-1] not in BUFFERS}
    try:
        ours, tied, scaled = _embeddings(sd, cfg["d_model"])
        for i in range(cfg["n_layers"]):
            ours.update(_block(sd, i, cfg, not cfg.get("attn_only", False)))
        ours["final_norm.weight"] = sd.pop("ln_final.w")
        if "ln_final.b" in sd:
            ours["final_norm.bias"] = sd.pop("ln_final.b")
    except KeyError as e:
        raise CheckpointError(f"{what}: weight {e} is missing") from None
    w_pos = sd.pop("pos_embed.W_pos", None)
    if w_pos is not None:
        ours["positions.table.weight"] = w_pos
    if sd:
        raise CheckpointError(f"{what}: weights we have no place for: {sorted(sd)[:8]}")
    return {k: v.float().contiguous() for k, v in ours.items()}, tied, scaled


def import_transformer_lens(source: Path, *, tokenizer: Path | None = None, **_: Any) -> Imported:
    """An export_tl folder -> Imported (sinusoidal and no-position W_pos recognised)."""
    folder = source if source.is_dir() else source.parent
    what = f"transformer-lens {folder.name}"
    cfg = read_json(folder / "config.json", what)
    for key in ("d_head", *SHAPE):
        if not isinstance(cfg.get(key), int):
            raise CheckpointError(f"{what}: config.json needs an integer {key}")
    norm, activation = check_config(cfg, what)
    positions, mlp = _positions(cfg, what), not cfg.get("attn_only", False)
    weights_path = folder / "model.safetensors"
    try:
        check_parameter_count(safetensors_parameter_count(weights_path), what)  # before reading them
        sd = load_file(str(weights_path), device="cpu")
    except (SafetensorError, OSError) as e:
        raise CheckpointError(f"{what}: model.safetensors is not readable ({e})") from None
    weights, tied, scaled = tl_weights(sd, cfg, what)
    positions = _refine_positions(positions, weights.get("positions.table.weight"))
    if positions != "learned":
        weights.pop("positions.table.weight", None)
    shape = {ours: cfg[theirs] for theirs, ours in SHAPE.items()}
    d_ff = cfg.get("d_mlp") or 4 * cfg["d_model"]
    flags = dict(mlp=mlp, tie_weights=tied, scale_embedding=scaled)
    config = gpt_config(
        what, **shape, d_ff=d_ff, positions=positions, norm=norm, activation=activation, **flags
    )
    tok = tl_tokenizer(folder, tokenizer, config.vocab_size)
    return Imported(config, weights, tok, {"from": "transformer-lens", "path": str(folder)})
