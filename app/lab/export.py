"""Downloads of attention arrays: JSON as [layer][head][query][key], CSV in long form.

The JSON layout is the one `python -m transformer_core trace --json` prints:
{"checkpoint", "input", "output", "tokens": {"source": [...], "target": [...]},
 "attention": {"self": [L][H][Tq][Tk]} or {"encoder_self", "decoder_self", "cross"}}
plus whatever else a page adds (options, unknown characters).
"""

from __future__ import annotations

import io
import json
from typing import Any

import numpy as np
import pandas as pd


def attention_json(attention: dict[str, np.ndarray], tokens: dict[str, list[str]], **info: object) -> str:
    return json.dumps(
        {**info, "tokens": tokens, "attention": {k: np.round(v, 6).tolist() for k, v in attention.items()}},
        ensure_ascii=False,
    )


def trace_payload(checkpoint: str, text: str, output: str, tokens: dict[str, list[str]],
                  attention: dict[str, np.ndarray], **extra: Any) -> dict[str, Any]:
    """The CLI's `trace --json` object for what a page shows (arrays still numpy)."""
    return {"checkpoint": checkpoint, "input": text, "output": output, "tokens": tokens,
            "attention": attention, **extra}


def attention_json_payload(payload: dict[str, Any]) -> str:
    """Serialise a trace_payload: arrays rounded to 6 decimals, as nested lists."""
    def plain(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return np.round(value.astype(np.float64), 6).tolist()
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, np.generic):
            return value.item()
        return value

    return json.dumps(plain(payload), ensure_ascii=False)


def attention_csv(attention: dict[str, np.ndarray], query_tokens: dict[str, list[str]],
                  key_tokens: dict[str, list[str]]) -> str:
    """One row per (kind, layer, head, query, key) with both tokens and the weight."""
    frames = []
    for kind, arr in attention.items():
        L, H, Tq, Tk = arr.shape
        layer, head, q, k = np.meshgrid(range(L), range(H), range(Tq), range(Tk), indexing="ij")
        frames.append(pd.DataFrame({
            "kind": kind, "layer": layer.ravel(), "head": head.ravel(),
            "query_index": q.ravel(), "query_token": np.array(query_tokens[kind])[q.ravel()],
            "key_index": k.ravel(), "key_token": np.array(key_tokens[kind])[k.ravel()],
            "weight": arr.ravel().round(6),
        }))
    buf = io.StringIO()
    pd.concat(frames).to_csv(buf, index=False)
    return buf.getvalue()
