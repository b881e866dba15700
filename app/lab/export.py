"""Downloads of attention arrays: JSON as [layer][head][query][key], CSV in long form."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd


def attention_json(attention: dict[str, np.ndarray], tokens: dict[str, list[str]], **info: object) -> str:
    return json.dumps(
        {**info, "tokens": tokens, "attention": {k: np.round(v, 6).tolist() for k, v in attention.items()}},
        ensure_ascii=False,
    )


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
