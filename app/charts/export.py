"""Downloads of a trace's attention: JSON as the core writes it, CSV in long form.

The JSON is `trace.to_json(checkpoint)` (exactly what `python -m transformer_core trace
--json` prints, see transformer_core.interp.trace) plus whatever a page adds (options,
unknown characters); the CSV has one row per weight with both tokens, for spreadsheets.
`attention_lab.charts.component.download_buttons` offers both under a chart section.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pandas as pd

from transformer_core.interp import JSON_DECIMALS, GPTTrace, Seq2SeqTrace


def file_stem(page: str, checkpoint: str, *parts: object) -> str:
    """A download's file name without extension, saying where it came from:
    `gpt_gpt-rope_L1H2_attention`, `reversal_run-1a2b3c4d_cross_L0H3`. Safe characters only."""
    short = checkpoint[:12] if checkpoint.startswith("run-") else checkpoint  # run-1a2b3c4d
    stem = "_".join(str(p) for p in (page, short, *parts) if p not in (None, ""))
    return re.sub(r"[^A-Za-z0-9.-]+", "_", stem)[:90]


def trace_json_text(trace: GPTTrace | Seq2SeqTrace, checkpoint: str, **extra: object) -> str:
    """The `trace --json` object of `trace`, with `extra` keys added, as JSON text."""
    return json.dumps({**trace.to_json(checkpoint), **extra}, ensure_ascii=False)


def attention_csv(trace: GPTTrace | Seq2SeqTrace) -> str:
    """One row per (kind, layer, head, query, key) with both tokens and the weight."""
    frames = []
    for kind, arr in trace.attention.items():
        queries, keys = trace.axes(kind)
        L, H, Tq, Tk = arr.shape
        layer, head, q, k = np.meshgrid(range(L), range(H), range(Tq), range(Tk), indexing="ij")
        frames.append(
            pd.DataFrame(
                {
                    "kind": kind,
                    "layer": layer.ravel(),
                    "head": head.ravel(),
                    "query_index": q.ravel(),
                    "query_token": np.array(queries)[q.ravel()],
                    "key_index": k.ravel(),
                    "key_token": np.array(keys)[k.ravel()],
                    "weight": arr.astype(np.float64).ravel().round(JSON_DECIMALS),
                }
            )
        )
    buf = io.StringIO()
    pd.concat(frames).to_csv(buf, index=False)
    return buf.getvalue()
