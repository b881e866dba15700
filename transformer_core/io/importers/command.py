"""The `import` command's arguments and run (registered in transformer_core.cli's COMMANDS)."""

from __future__ import annotations

import argparse
import json

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


def cmd_import(args: argparse.Namespace) -> None:
    result = import_model(args.source, args.source_kind, args.out, meta=args.meta, tokenizer=args.tokenizer)
    payload = result.to_json()
    if args.json:
        print(json.dumps(payload, ensure_ascii=False))
        return
    print(
        f"imported {payload['from']} {payload['source']}: {payload['parameters']:,} parameters, "
        f"{payload['vocab_size']:,} tokens ({payload['tokenizer']} tokenizer) -> {payload['out']}"
    )
