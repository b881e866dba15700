"""Interpretability: attention traces, head detectors and importance, rollout and logit lens,
one query step by step."""

from transformer_core.interp.heads import (
    DESCRIPTIONS,
    SCORES,
    TEMPLATE_SCORES,
    HeadScores,
    anti_diagonal_scores,
)
from transformer_core.interp.importance import (
    Importance,
)
from transformer_core.interp.inspection import (
    QuerySteps,
    distribution_shift,
    future_cells,
    query_steps,
    record_arrays,
    softmax_allowed,
)
from transformer_core.interp.report import (
    analyze_heads,
    heads_json,
    report_detectors,
    report_flow,
    report_importance,
)
from transformer_core.interp.trace import (
    JSON_DECIMALS,
    GPTTrace,
    Seq2SeqTrace,
    trace_gpt,
    trace_seq2seq,
)

__all__ = [
    "DESCRIPTIONS",
    "GPTTrace",
    "HeadScores",
    "Importance",
    "JSON_DECIMALS",
    "QuerySteps",
    "SCORES",
    "Seq2SeqTrace",
    "TEMPLATE_SCORES",
    "analyze_heads",
    "anti_diagonal_scores",
    "distribution_shift",
    "future_cells",
    "heads_json",
    "query_steps",
    "record_arrays",
    "report_detectors",
    "report_flow",
    "report_importance",
    "softmax_allowed",
    "trace_gpt",
    "trace_seq2seq",
]
