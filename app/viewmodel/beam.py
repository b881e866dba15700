"""A beam search read as a page needs it: the winner's path step by step, and its tokens as the
samples the /gpt page draws (the shaded continuation, the maps over prompt + output)."""

from __future__ import annotations

import math

from attention_lab.models.explorer_compute import Sample
from transformer_core.beam import BeamResult, Hypothesis
from transformer_core.io import Tokenizer


def label(tokenizer: Tokenizer, hyp: Hypothesis) -> str:
    """The readable label of a hypothesis's newest token (space as ␣)."""
    return tokenizer.token_labels([hyp.tokens[-1]])[0]


def path_steps(result: BeamResult) -> list[Hypothesis]:
    """The winner's prefix at each step (the hypothesis that step kept or finished)."""
    best = result.best.tokens
    found = []
    for step in result.steps:
        prefix = best[: step.step + 1]
        found += [h for h in (*step.kept, *step.finished) if h.tokens == prefix][:1]
    return found


def beam_samples(tokenizer: Tokenizer, result: BeamResult) -> list[Sample]:
    """The winner's tokens (EOS left out) as the page's samples: each with its own probability
    (the step's gain in log P) and, as alternatives, the other continuations of the same prefix
    that step ranked."""
    samples, before = [], 0.0
    for hyp in path_steps(result)[: len(result.tokens)]:
        step = result.steps[len(hyp.tokens) - 1]
        siblings = [
            h
            for h in (*step.kept, *step.finished, *step.pruned)
            if h.tokens[:-1] == hyp.tokens[:-1] and h.tokens != hyp.tokens
        ]
        token = hyp.tokens[-1]
        samples.append(
            Sample(
                label=label(tokenizer, hyp),
                text=tokenizer.decode([token], skip_special=False),
                token=token,
                prob=math.exp(hyp.log_prob - before),
                top=[
                    (tokenizer.token_labels([h.tokens[-1]])[0], math.exp(h.log_prob - before))
                    for h in siblings
                ],
            )
        )
        before = hyp.log_prob
    return samples
