"""`python -m transformer_core explain`: why a head attends where it does, as the parts of its
pre-softmax score (transformer_core.interp.decompose)."""

from __future__ import annotations

import argparse
import json

import numpy as np

from transformer_core.config import ATTENTION_KINDS
from transformer_core.device import DEVICE_CHOICES, resolve_device
from transformer_core.errors import ConfigError
from transformer_core.interp.decompose import Explained, explain
from transformer_core.io import load_checkpoint

EXPLAIN_HELP = (
    "Split one head's pre-softmax score at (query I, key J) into what each part of the residual "
    "stream contributes on each side: token embedding, absolute positions, every earlier head and "
    "MLP, and the biases, with the layer norms' scales frozen (a pre-LN model); ALiBi's or T5's "
    "bias is the one 'position' term. Without --key: the key the head attends to most, plus the "
    'whole row. --json prints {"score", "parts": {"query": [...], "key": [...]}, "contributions": '
    '[[...]] (query part x key part), "position", "weight", "gap" (|sum - score|), "kind", "layer", '
    '"head", "query", "key", "tokens": {"query", "key"}, "row": {"keys", "scores", "by_key_part"}}'
)


def parse_head(spec: str, arch: str) -> tuple[str, int, int]:
    """'L.H' (a GPT's self-attention, a reversal model's cross-attention) or 'kind:L.H'."""
    kind, _, numbers = spec.rpartition(":")
    kind = kind or ("cross" if arch == "seq2seq" else "self")
    try:
        layer, head = (int(x) for x in numbers.split("."))
    except ValueError:
        raise ConfigError(f"head: {spec!r} is not L.H (e.g. 1.1) or kind:L.H") from None
    if kind not in ATTENTION_KINDS:
        raise ConfigError(f"head: kind {kind!r} is not one of {ATTENTION_KINDS}")
    return kind, layer, head


def explain_json(found: Explained, key: int | None) -> dict:
    """The command's object: one cell (the given key, else the most attended one) and the row."""
    parts = found.parts
    key = int(np.argmax(parts.weights)) if key is None else key
    if not 0 <= key < len(found.keys):
        raise ConfigError(
            f"key: {key} is outside the {len(found.keys)} key positions (0-{len(found.keys) - 1})"
        )
    row = {
        "keys": found.keys,
        "scores": np.round(parts.scores.astype(np.float64), 6).tolist(),
        "by_key_part": np.round(parts.contributions.sum(1).astype(np.float64), 6).tolist(),
    }
    tokens = {"query": found.queries[parts.query], "key": found.keys[key]}
    return {**parts.cell_json(key), "tokens": tokens, "row": row}


def explain_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("checkpoint", help="a pre-LN Transformer: shipped name, run id or folder")
    sp.add_argument("text")
    sp.add_argument(
        "--head", required=True, metavar="L.H", help="L.H or kind:L.H, kind in " + ", ".join(ATTENTION_KINDS)
    )
    sp.add_argument("--query", type=int, required=True, metavar="I", help="the query position (0-based)")
    sp.add_argument(
        "--key", type=int, default=None, metavar="J", help="the key position (default: the most attended)"
    )
    sp.add_argument("--device", choices=DEVICE_CHOICES, default="cpu")


def cmd_explain(args: argparse.Namespace) -> None:
    ckpt = load_checkpoint(args.checkpoint, resolve_device(args.device))
    kind, layer, head = parse_head(args.head, ckpt.config.arch)
    payload = explain_json(explain(ckpt, args.text, kind, layer, head, args.query), args.key)
    if args.json:
        print(json.dumps(payload, ensure_ascii=False))
        return
    names_q, names_k = payload["parts"]["query"], payload["parts"]["key"]
    cells = np.asarray(payload["contributions"])
    order = np.argsort(-np.abs(cells), axis=None)[:8]
    lines = [
        f"{kind} {layer}.{head}, query {args.query} {payload['tokens']['query']!r} -> key {payload['key']} "
        f"{payload['tokens']['key']!r}: score {payload['score']:.4f} (weight {payload['weight']:.3f}), "
        f"parts sum to it within {payload['gap']:.1e}"
    ]
    for flat in order:
        a, b = np.unravel_index(flat, cells.shape)
        lines.append(f"  query {names_q[a]:<8} x key {names_k[b]:<8} {cells[a, b]:+.4f}")
    if payload["position"]:
        lines.append(f"  position bias {payload['position']:+.4f}")
    print("\n".join(lines))
