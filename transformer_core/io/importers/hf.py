"""Import a Hugging Face GPT-2-family model (gpt2, distilgpt2, any GPT2LMHeadModel) from its
folder: config.json (read by hand: no transformers import), model.safetensors or its shards,
tokenizer.json.

Why exact: GPT-2 is our pre-LN GPT with learned positions, unscaled tied embeddings and
GELU's tanh approximation ("gelu_new"); anything in config.json that would make it compute
something else is refused by name, never approximated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from transformer_core.config import ModelConfig
from transformer_core.errors import CheckpointError
from transformer_core.io.importers.common import (
    Imported,
    gpt2_weights,
    gpt_config,
    lm_head_is_tied,
    read_json,
)
from transformer_core.io.tokenizers import BPE_FILE, BPETokenizer

WEIGHTS, INDEX = "model.safetensors", "model.safetensors.index.json"
#: HF activation_function -> ours (both tanh forms are the same formula)
ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
#: config.json fields that change GPT-2's computation, and the value we compute exactly
MUST_BE = {
    "scale_attn_weights": True,
    "scale_attn_by_inverse_layer_idx": False,
    "reorder_and_upcast_attn": False,
    "add_cross_attention": False,
    "layer_norm_epsilon": 1e-5,
}


def check_architecture(cfg: dict[str, Any], what: str) -> None:
    """CheckpointError naming the first thing GPT-2 config.json says that we cannot run exactly."""
    model_type = cfg.get("model_type")
    if model_type != "gpt2":
        raise CheckpointError(
            f"{what}: model_type {model_type!r} is not GPT-2 (e.g. GPT-NeoX/Llama use rotary positions "
            "and other blocks); only GPT2LMHeadModel checkpoints import exactly"
        )
    architectures = cfg.get("architectures") or ["GPT2LMHeadModel"]
    if architectures != ["GPT2LMHeadModel"]:
        raise CheckpointError(f"{what}: architectures {architectures} is not ['GPT2LMHeadModel']")
    act = cfg.get("activation_function", "gelu_new")
    if act not in ACTIVATIONS:
        raise CheckpointError(
            f"{what}: activation_function {act!r} is not one we compute exactly ({sorted(ACTIVATIONS)})"
        )
    for key, value in MUST_BE.items():
        if key in cfg and cfg[key] != value:
            raise CheckpointError(f"{what}: {key}={cfg[key]!r} is not supported (we compute {key}={value!r})")


def hf_config(cfg: dict[str, Any], what: str) -> ModelConfig:
    """Our config of a GPT-2 config.json (its defaults where a field is absent)."""
    check_architecture(cfg, what)
    d_model = cfg.get("n_embd", 768)
    return gpt_config(
        what,
        vocab_size=cfg.get("vocab_size", 50257),
        d_model=d_model,
        n_heads=cfg.get("n_head", 12),
        n_layers=cfg.get("n_layer", 12),
        d_ff=cfg.get("n_inner") or 4 * d_model,
        max_len=cfg.get("n_positions", cfg.get("n_ctx", 1024)),
        positions="learned",
        activation=ACTIVATIONS[cfg.get("activation_function", "gelu_new")],
        tie_weights=bool(cfg.get("tie_word_embeddings", True)),
        scale_embedding=False,
    )


def weight_files(folder: Path) -> list[Path]:
    """model.safetensors, or the shards its index names (plain file names in the folder only)."""
    if (folder / WEIGHTS).is_file():
        return [folder / WEIGHTS]
    if not (folder / INDEX).is_file():
        raise CheckpointError(
            f"{folder}: no {WEIGHTS} or {INDEX} (pytorch_model.bin is a pickle and is never read)"
        )
    weight_map = read_json(folder / INDEX, "hf").get("weight_map")
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{folder / INDEX}: no weight_map")
    names = sorted(set(weight_map.values()))
    bad = [n for n in names if not isinstance(n, str) or Path(n).name != n or not n.endswith(".safetensors")]
    if bad:
        raise CheckpointError(f"{folder / INDEX}: shard names must be .safetensors files beside it: {bad}")
    return [folder / n for n in names]


def read_weights(files: list[Path]) -> dict[str, torch.Tensor]:
    tensors: dict[str, torch.Tensor] = {}
    for path in files:
        try:
            tensors.update(load_file(str(path), device="cpu"))
        except (SafetensorError, OSError) as e:
            raise CheckpointError(f"{path}: not a readable safetensors file ({e})") from None
    return tensors


def import_hf(source: Path, *, tokenizer: Path | None = None, **_: Any) -> Imported:
    """A Hugging Face GPT-2 folder -> Imported (tokenizer.json from the folder or `tokenizer`)."""
    folder = source if source.is_dir() else source.parent
    what = f"hf {folder.name}"
    cfg = read_json(folder / "config.json", what)
    config = hf_config(cfg, what)
    tensors = read_weights(weight_files(folder))
    if not config.tie_weights and lm_head_is_tied(tensors):
        raise CheckpointError(f"{what}: tie_word_embeddings is false but there is no separate lm_head.weight")
    weights = gpt2_weights(tensors, config, conv1d=True, bias=True, what=what)
    eos = cfg.get("eos_token_id")
    tok = BPETokenizer.from_file(
        tokenizer or folder / BPE_FILE, config.vocab_size, eos if isinstance(eos, int) else None
    )
    return Imported(config, weights, tok, {"from": "hf", "path": str(folder), "model_type": "gpt2"})
