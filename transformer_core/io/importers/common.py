"""What every importer shares: the imported model's parts, the size bound, GPT-2's key layout,
and writing the result as a normal checkpoint folder.

Why: nanoGPT and Hugging Face GPT-2 name their weights alike (transformer.wte, h.N.attn.c_attn,
...), and every kind ends the same way (build our GPT, load the weights strictly, save).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from transformer_core.config import ModelConfig
from transformer_core.errors import CheckpointError, ConfigError
from transformer_core.io.checkpoint import check_parameter_count, save_checkpoint
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.models import GPT, count_parameters

MAX_JSON_BYTES = 1_000_000  # a config.json is a few hundred bytes


@dataclass(frozen=True)
class Imported:
    """An imported model before it is written: config, weights under our names, tokenizer,
    and where it came from (recorded in checkpoint.json as "source")."""

    config: ModelConfig
    weights: dict[str, torch.Tensor]
    tokenizer: Tokenizer
    source: dict[str, Any]


def read_json(path: Path, what: str) -> dict[str, Any]:
    """A JSON object from a small file; CheckpointError naming the file otherwise."""
    if not path.is_file():
        raise CheckpointError(f"{what}: {path} not found")
    if path.stat().st_size > MAX_JSON_BYTES:
        raise CheckpointError(f"{what}: {path} is larger than {MAX_JSON_BYTES:,} bytes")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{what}: {path} is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"{what}: {path} does not hold a JSON object")
    return data


def gpt_config(what: str, **fields: Any) -> ModelConfig:
    """A GPT config, its parameter count checked against ATTENTION_LAB_MAX_PARAMS before any
    weight is read (counted on a model built on the meta device: no memory)."""
    try:
        config = ModelConfig(arch="gpt", **fields)
    except (ConfigError, TypeError) as e:
        raise CheckpointError(f"{what}: the model's shape is not one we can build ({e})") from None
    with torch.device("meta"):
        check_parameter_count(count_parameters(GPT(config)), what)
    return config


#: GPT-2 / nanoGPT names inside block N -> ours inside blocks.N (weights (out, in) in ours)
GPT2_BLOCK = {
    "ln_1": "norm_self",
    "attn.c_attn": "self_attn.in_proj",
    "attn.c_proj": "self_attn.out_proj",
    "ln_2": "norm_ffn",
    "mlp.c_fc": "ffn.w1",
    "mlp.c_proj": "ffn.w2",
}
GPT2_TOP = {"wte": "tok_emb", "wpe": "positions.table", "ln_f": "final_norm"}
GPT2_BUFFERS = (".attn.bias", ".attn.masked_bias")  # causal-mask buffers of old GPT-2 / nanoGPT files


def _gpt2_names(n_layers: int) -> dict[str, str]:
    """Every GPT-2 module name (no "transformer." prefix) -> ours."""
    names = dict(GPT2_TOP)
    for i in range(n_layers):
        names.update({f"h.{i}.{theirs}": f"blocks.{i}.{ours}" for theirs, ours in GPT2_BLOCK.items()})
    return names


def gpt2_weights(
    tensors: dict[str, torch.Tensor], config: ModelConfig, *, conv1d: bool, bias: bool, what: str
) -> dict[str, torch.Tensor]:
    """GPT-2-layout tensors -> our state dict (float32).

    Keys may carry "_orig_mod." (torch.compile) and "transformer." prefixes. conv1d: Hugging
    Face's Conv1D stores linear weights as (in, out), transposed here; nanoGPT's nn.Linear
    is (out, in) like ours. bias=False (nanoGPT): no bias is stored and each becomes zeros,
    which computes exactly what bias-free LayerNorm and Linear compute. A key that maps to
    nothing of ours is refused by name, never dropped."""
    theirs = {}
    for key, value in tensors.items():
        key = key.removeprefix("_orig_mod.").removeprefix("transformer.")
        if not key.endswith(GPT2_BUFFERS):
            theirs[key] = value
    ours: dict[str, torch.Tensor] = {}
    for name, target in _gpt2_names(config.n_layers).items():
        weight = theirs.pop(f"{name}.weight", None)
        if weight is None:
            raise CheckpointError(f"{what}: {name}.weight is missing")
        linear = name.startswith("h.") and weight.dim() == 2
        ours[f"{target}.weight"] = weight.T if conv1d and linear else weight
        if name in ("wte", "wpe"):
            continue
        b = theirs.pop(f"{name}.bias", None)
        if (b is None) == bias:
            state = "missing" if bias else "present although the model says bias=False"
            raise CheckpointError(f"{what}: {name}.bias is {state}")
        ours[f"{target}.bias"] = torch.zeros(ours[f"{target}.weight"].size(0)) if b is None else b
    head = theirs.pop("lm_head.weight", None)
    ours["lm_head.weight"] = ours["tok_emb.weight"] if config.tie_weights or head is None else head
    if theirs:
        raise CheckpointError(f"{what}: weights we have no place for: {sorted(theirs)[:8]}")
    return {k: v.float().contiguous() for k, v in ours.items()}


def lm_head_is_tied(tensors: dict[str, torch.Tensor]) -> bool:
    """Whether a GPT-2-layout file's lm_head is its token embedding (absent or equal)."""
    by_name = {k.removeprefix("_orig_mod.").removeprefix("transformer."): v for k, v in tensors.items()}
    head = by_name.get("lm_head.weight")
    return head is None or torch.equal(head, by_name.get("wte.weight", head))


def build_imported(imported: Imported, what: str) -> GPT:
    """Our GPT with the imported weights, loaded strictly (every parameter, exact shapes)."""
    model = GPT(imported.config)
    try:
        model.load_state_dict(imported.weights, strict=True)
    except RuntimeError as e:
        raise CheckpointError(f"{what}: weights do not fit the config ({e})") from None
    return model.eval()


def write_checkpoint(imported: Imported, out: Path) -> tuple[Path, GPT]:
    """Save an import as a checkpoint folder (out must be new or empty)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CheckpointError(f"import: {out} already exists and is not an empty folder")
    model = build_imported(imported, str(imported.source.get("path")))
    if imported.config.vocab_size != len(imported.tokenizer):
        raise CheckpointError(
            f"import: the tokenizer has {len(imported.tokenizer)} tokens but the model embeds "
            f"{imported.config.vocab_size}"
        )
    save_checkpoint(out, model, imported.tokenizer, source=imported.source, label=out.name)
    return out, model


def sqrt_scaled(embedding: torch.Tensor, unembedding: torch.Tensor, d_model: int) -> bool:
    """Whether embedding is exactly unembedding * sqrt(d_model) (our scaled, tied embedding
    as export_tl writes it), bit for bit."""
    return torch.equal(embedding, unembedding * math.sqrt(d_model))
