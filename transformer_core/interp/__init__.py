"""Interpretability: attention traces, head detectors and importance, rollout and logit lens,
one query step by step."""

from transformer_core.interp.attribution import (
    Attribution,
    direct_logit_attribution,
)
from transformer_core.interp.composition import (
    Circuit,
    Composition,
    HeadWeights,
    composition_score,
    composition_scores,
    head_weights,
    ov_circuits,
    qk_circuits,
)
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
    HeadMerge,
    QuerySteps,
    distribution_shift,
    future_cells,
    head_merge,
    query_steps,
    record_arrays,
    softmax_allowed,
)
from transformer_core.interp.patching import (
    Patching,
    activation_patching,
)
from transformer_core.interp.report import (
    analyze_heads,
    composition_json,
    heads_json,
    report_attribution,
    report_composition,
    report_detectors,
    report_flow,
    report_importance,
    report_induction_probe,
    report_patching,
)
from transformer_core.interp.trace import (
    JSON_DECIMALS,
    GPTTrace,
    Seq2SeqTrace,
    trace_gpt,
    trace_seq2seq,
)

__all__ = [
    "Attribution",
    "Patching",
    "activation_patching",
    "direct_logit_attribution",
    "report_attribution",
    "report_patching",
    "Circuit",
    "Composition",
    "DESCRIPTIONS",
    "GPTTrace",
    "HeadMerge",
    "HeadScores",
    "HeadWeights",
    "Importance",
    "JSON_DECIMALS",
    "QuerySteps",
    "SCORES",
    "Seq2SeqTrace",
    "TEMPLATE_SCORES",
    "analyze_heads",
    "head_merge",
    "anti_diagonal_scores",
    "composition_json",
    "composition_score",
    "composition_scores",
    "distribution_shift",
    "future_cells",
    "head_weights",
    "heads_json",
    "ov_circuits",
    "qk_circuits",
    "query_steps",
    "record_arrays",
    "report_composition",
    "report_detectors",
    "report_flow",
    "report_importance",
    "report_induction_probe",
    "softmax_allowed",
    "trace_gpt",
    "trace_seq2seq",
]
