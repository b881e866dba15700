"""`python -m transformer_core profile`: every head's detector scores over many held-out windows
and its top-activating pairs, kept beside the checkpoint with --write (transformer_core.interp.profiles)."""

from __future__ import annotations

import argparse
import json

import numpy as np

from transformer_core.device import DEVICE_CHOICES, resolve_device
from transformer_core.interp.profiles import PROFILE_WINDOWS, profile_heads, save_profiles
from transformer_core.io import load_checkpoint

PROFILE_HELP = (
    "Score every head of a GPT on each of N held-out windows of its own data (median and quartiles "
    "per score) and find its 20 largest weights across them. --write keeps the result as "
    "profiles.json beside the checkpoint (the /heads page reads it). --json prints "
    '{"checkpoint_sha", "data", "windows", "scores": {score: [W][L][H]}, '
    '"top": [L][H][20][window, query, key, weight]}'
)


def profile_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("checkpoint", help="a GPT: shipped name, run id or folder")
    sp.add_argument("--windows", type=int, default=PROFILE_WINDOWS, help="held-out windows to read (1-256)")
    sp.add_argument("--write", action="store_true", help="keep profiles.json beside the checkpoint")
    sp.add_argument("--device", choices=DEVICE_CHOICES, default="cpu")


def cmd_profile(args: argparse.Namespace) -> None:
    ckpt = load_checkpoint(args.checkpoint, resolve_device(args.device))
    profiles = profile_heads(ckpt, windows=max(1, min(args.windows, 256)))
    if args.write and ckpt.folder is not None:
        save_profiles(profiles, ckpt.folder)
    if args.json:
        print(json.dumps(profiles.to_json(), ensure_ascii=False))
        return
    median = profiles.quartiles("previous_token")[1]
    best = np.unravel_index(np.nanargmax(median), median.shape)
    print(f"{ckpt.name}: {profiles.data}; highest median previous-token score: head {best[0]}.{best[1]}, "
          f"{median[best]:.2f}" + (f"; written to {ckpt.folder}" if args.write else ""))  # fmt: skip
