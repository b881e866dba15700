"""The softmax walk of one query, as data (pure, no Streamlit): each step of
s = q·k / √d_k (+ bias), masking, exponentiation and normalisation, with what it does.

The numbers come from transformer_core.interp.query_steps; this only orders them into the
columns the /gpt page reveals one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer_core.interp import QuerySteps


@dataclass(frozen=True)
class WalkStep:
    """One column of the walk: its header, one value per key, and a sentence saying what happens."""

    column: str
    values: np.ndarray
    says: str


#: what the mask step does, by attention kind: a causal mask hides later keys, a padding mask fillers
MASK_SAYS = {
    "self": "the causal mask sets the scores of later keys to −∞, so e^(−∞) = 0",
    "decoder_self": "the causal mask sets the scores of later keys to −∞, so e^(−∞) = 0",
    "encoder_self": "the padding mask would set the scores of <pad> keys to −∞ (one input has none)",
    "cross": "the padding mask would set the scores of <pad> keys to −∞ (one input has none)",
    "unmasked": "nothing is masked: every key, before and after the query, may be read",
}


def softmax_walk(
    steps: QuerySteps, scheme: str, kind: str = "self", sent: np.ndarray | None = None
) -> list[WalkStep]:
    """The walk from dot products to softmax weights; `scheme` names the position bias, if any;
    `kind` the attention kind, whose mask the mask step names; sent (Tk,): each key's share of
    ||w v W_O|| in the row, a last step where the page shows value-weighted attention."""
    d_k = steps.q.shape[0]
    allowed = steps.allowed
    shifted = np.where(allowed, np.exp(steps.scores - steps.scores[allowed].max()), 0.0)
    walk = [
        WalkStep("q·k", steps.dot, "the query's dot product with every key"),
        WalkStep(
            f"× 1/√{d_k}", steps.scaled, f"scaled by 1/√d_k = 1/√{d_k}, so the scores keep a unit spread"
        ),
    ]
    if steps.bias is not None:
        says = f"{scheme} adds a bias that grows with the distance"
        walk.append(WalkStep(f"+ {scheme} bias", steps.bias, says))
    return (
        walk
        + [
            WalkStep("score s", steps.scores, "the score of each key"),
            WalkStep(
                "masked s",
                np.where(allowed, steps.scores, -np.inf),
                MASK_SAYS[kind],
            ),
            WalkStep(
                "e^(s − max)",
                shifted,
                f"exponentiated (minus the largest score, for stability); sum {shifted.sum():.4f}",
            ),
            WalkStep(
                "weight w", steps.weights, "softmax: each key's share of the sum; the weights add up to 1"
            ),
        ]
        + (
            []
            if sent is None
            else [
                WalkStep(
                    "share sent",
                    sent,
                    "value-weighted: each weight times the size of what its key's value sends through "
                    "W_O, ‖w·v·W_O‖, as a share of the row",
                )
            ]
        )
    )


def walk_table(tokens: list[str], walk: list[WalkStep], upto: int) -> dict[str, list | np.ndarray]:
    """The walk's table up to step `upto` (inclusive): one row per key, one column per step."""
    table: dict[str, list | np.ndarray] = {"key": [f"{j}: {t}" for j, t in enumerate(tokens)]}
    table.update({step.column: step.values for step in walk[: upto + 1]})
    return table
