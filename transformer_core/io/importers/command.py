"""The `import` command's arguments and run (registered in transformer_core.cli's COMMANDS)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from transformer_core.errors import ConfigError
from transformer_core.interp.profiles import profile_heads, save_profiles
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.importers import IMPORTERS, import_model

IMPORT_HELP = (
    "write a model trained elsewhere as a checkpoint folder: nanoGPT's ckpt.pt (+ meta.pkl), a Hugging "
    "Face GPT-2 folder (config.json, model.safetensors, tokenizer.json) or an `export` TransformerLens folder"
)


def import_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("source", help="nanoGPT's out folder or ckpt.pt; a Hugging Face or TL folder")
    sp.add_argument("--from", dest="source_kind", choices=list(IMPORTERS), required=True)
    sp.add_argument("--out", required=True, help="the checkpoint folder to write (new or empty)")
    sp.add_argument("--meta", default=None, help="nanogpt: a character run's meta.pkl if not beside ckpt.pt")
    sp.add_argument("--tokenizer", default=None, help="a tokenizer.json (GPT-2 BPE) when not in the source")


def keep_profiles(folder: Path) -> tuple[str | None, str]:
    """Profile the imported model's heads on the default corpus and keep profiles.json beside it
    (what /heads section 11 reads; a GPT-2 small takes about 15 s on 2 CPU threads):
    (the file, what was read) or (None, why not)."""
    try:
        profiles = profile_heads(load_checkpoint(str(folder)))
    except ConfigError as e:
        return None, str(e)
    return str(save_profiles(profiles, folder)), profiles.data


def cmd_import(args: argparse.Namespace) -> None:
    result = import_model(args.source, args.source_kind, args.out, meta=args.meta, tokenizer=args.tokenizer)
    profiles, read = keep_profiles(result.out)
    payload = {**result.to_json(), "profiles": profiles, "profiles_read": read}
    if args.json:
        print(json.dumps(payload, ensure_ascii=False))
        return
    print(
        f"imported {payload['from']} {payload['source']}: {payload['parameters']:,} parameters, "
        f"{payload['vocab_size']:,} tokens ({payload['tokenizer']} tokenizer) -> {payload['out']}"
    )
    print(f"head profiles (/heads 11) over {read}" if profiles else f"no head profiles: {read}")
