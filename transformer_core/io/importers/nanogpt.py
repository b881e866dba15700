"""Import a nanoGPT run: its ckpt.pt ({"model", "model_args", ...}) and the character
vocabulary of its meta.pkl, or GPT-2's BPE (a tokenizer.json) when it has none.

Why safe: ckpt.pt is read with torch.load(weights_only=True) (tensors and plain containers
only) and meta.pkl through `PlainDataUnpickler`, which refuses every global, so a crafted
pickle cannot run anything. nanoGPT's model is GPT-2's with exact GELU (nn.GELU()), unscaled
tied embeddings and optionally no biases (zeros here: the same numbers).
"""

from __future__ import annotations

import io
import pickle  # only for PlainDataUnpickler, which loads no global at all
import re
from pathlib import Path
from typing import Any

import torch

from transformer_core.errors import CheckpointError
from transformer_core.io.importers.common import Imported, gpt2_weights, gpt_config, lm_head_is_tied
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.io.tokenizers import BPETokenizer, PlainCharTokenizer

CKPT_FILE, META_PKL = "ckpt.pt", "meta.pkl"
MAX_META_BYTES = 10_000_000
MODEL_ARGS = ("n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size")
PLAIN_NAME = re.compile(r"^[\w.-]{1,64}$")


class PlainDataUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, tuples, strings, numbers, booleans and None: the opcodes for
    these need no global, and every global (any class or function, e.g. os.system) is refused
    before anything is called."""

    def find_class(self, module: str, name: str) -> Any:
        raise CheckpointError(
            f"{META_PKL}: refuses {module}.{name}: only plain dicts, lists, strings and numbers are read"
        )

    def persistent_load(self, pid: Any) -> Any:
        raise CheckpointError(f"{META_PKL}: refuses a persistent reference")


def read_plain_pickle(path: Path) -> Any:
    """The plain data in a small pickle file, through PlainDataUnpickler."""
    if path.stat().st_size > MAX_META_BYTES:
        raise CheckpointError(f"{path}: larger than {MAX_META_BYTES:,} bytes")
    try:
        return PlainDataUnpickler(io.BytesIO(path.read_bytes())).load()
    except CheckpointError:
        raise
    except Exception as e:  # a truncated or malformed pickle raises many kinds
        raise CheckpointError(f"{path}: not a readable pickle of plain data ({type(e).__name__})") from None


def char_vocab(meta: Any, vocab_size: int, path: Path) -> PlainCharTokenizer:
    """nanoGPT's {"vocab_size", "itos", "stoi"} -> the characters in id order."""
    itos = meta.get("itos") if isinstance(meta, dict) else None
    if not isinstance(itos, dict | list):
        raise CheckpointError(f"{path}: no itos (id -> character) table")
    if len(itos) != vocab_size:
        raise CheckpointError(f"{path}: {len(itos)} characters but the model embeds {vocab_size}")
    try:
        return PlainCharTokenizer([itos[i] for i in range(vocab_size)])
    except (KeyError, IndexError):
        raise CheckpointError(f"{path}: itos does not cover ids 0..{vocab_size - 1}") from None


def load_ckpt(path: Path) -> dict[str, Any]:
    """ckpt.pt through torch.load(weights_only=True): tensors and plain containers only."""
    if not path.is_file():
        raise CheckpointError(f"nanogpt: {path} not found")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise CheckpointError(f"{path}: holds objects that safe loading refuses ({e})") from None
    except (RuntimeError, EOFError, OSError, ValueError) as e:
        raise CheckpointError(f"{path}: not a readable torch checkpoint ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise CheckpointError(f"{path}: not a nanoGPT checkpoint (no 'model' state dict)")
    if not isinstance(data.get("model_args"), dict):
        raise CheckpointError(f"{path}: not a nanoGPT checkpoint (no 'model_args')")
    return data


def find_meta(ckpt_path: Path, data: dict[str, Any]) -> Path | None:
    """meta.pkl beside ckpt.pt, else nanoGPT's data/<dataset>/meta.pkl beside the out folder."""
    candidates = [ckpt_path.parent / META_PKL]
    dataset = (data.get("config") or {}).get("dataset") if isinstance(data.get("config"), dict) else None
    if isinstance(dataset, str) and PLAIN_NAME.match(dataset) and dataset not in (".", ".."):
        candidates.append(ckpt_path.parent.parent / "data" / dataset / META_PKL)
    return next((p for p in candidates if p.is_file()), None)


def nanogpt_tokenizer(
    ckpt_path: Path, data: dict[str, Any], vocab_size: int, meta: Path | None, tokenizer: Path | None
) -> tuple[Tokenizer, str]:
    """The run's tokenizer and where it came from: meta.pkl's characters, else GPT-2's BPE."""
    meta = meta or find_meta(ckpt_path, data)
    if meta is not None:
        return char_vocab(read_plain_pickle(meta), vocab_size, meta), str(meta)
    if tokenizer is None:
        raise CheckpointError(
            f"nanogpt: no {META_PKL} beside {ckpt_path} or in data/<dataset>/ (pass --meta PATH for a "
            "character model); a GPT-2-BPE run needs --tokenizer PATH to gpt2's tokenizer.json"
        )
    return BPETokenizer.from_file(tokenizer, vocab_size), str(tokenizer)


def import_nanogpt(
    source: Path, *, meta: Path | None = None, tokenizer: Path | None = None, **_: Any
) -> Imported:
    """nanoGPT's out folder or ckpt.pt -> Imported."""
    path = source / CKPT_FILE if source.is_dir() else source
    data = load_ckpt(path)
    args, what = data["model_args"], f"nanogpt {path}"
    missing = [k for k in MODEL_ARGS if k not in args]
    if missing:
        raise CheckpointError(f"{what}: model_args lacks {missing}")
    if not isinstance(args["bias"], bool):
        raise CheckpointError(f"{what}: model_args bias={args['bias']!r} is not true/false")
    tied = lm_head_is_tied(data["model"])
    config = gpt_config(
        what,
        vocab_size=args["vocab_size"],
        d_model=args["n_embd"],
        n_heads=args["n_head"],
        n_layers=args["n_layer"],
        d_ff=4 * args["n_embd"],
        max_len=args["block_size"],
        positions="learned",
        activation="gelu",  # nanoGPT's MLP is nn.GELU(): exact, not the tanh form
        tie_weights=tied,
        scale_embedding=False,
    )
    weights = gpt2_weights(data["model"], config, conv1d=False, bias=args["bias"], what=what)
    tok, vocab_from = nanogpt_tokenizer(path, data, config.vocab_size, meta, tokenizer)
    source_info = {"from": "nanogpt", "path": str(path), "vocabulary": vocab_from, "bias": args["bias"]}
    return Imported(config, weights, tok, source_info)
