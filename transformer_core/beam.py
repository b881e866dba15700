"""Beam search for every model kind, returning the whole search for the app's beam tree.

Each step expands the W live hypotheses at once (one batched forward over the beams, through
the model's KV cache or recurrent state), ranks all W x V continuations by cumulative
log-probability, and of the best 2W keeps W that go on; an EOS continuation ranked within the
top W finishes its hypothesis. The search stops when W hypotheses have finished (so width 1 is
greedy decoding), when no live hypothesis can still beat the best finished one, or after
max_new_tokens (the live ones then compete as they are). The winner has the best score
log P / lp(length), with the GNMT length penalty lp = ((5 + length) / 6) ** alpha (Wu et al.
2016), length counting the generated tokens, EOS included; alpha 0 ranks by log P alone.
Log-probabilities are the model's full softmax: banned tokens are never chosen, not
renormalised away, so a plain forward pass re-scores every hypothesis exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions
from transformer_core.errors import ConfigError
from transformer_core.models import Model
from transformer_core.stepping import SpecialTokens, special_tokens, stepper_for

MAX_BEAM_WIDTH = 8
DEFAULT_ALPHA = 0.6  # GNMT's length-penalty strength


def check_beam_width(width: object, max_width: int = MAX_BEAM_WIDTH) -> int:
    """The width as an int (a string of digits is read, e.g. from a URL); ConfigError otherwise."""
    if isinstance(width, str) and width.strip().isdigit():
        width = int(width)
    if isinstance(width, bool) or not isinstance(width, int) or not 1 <= width <= max_width:
        raise ConfigError(f"beam width: {width!r} is not a whole number from 1 to {max_width}")
    return width


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's lp(length) = ((5 + length) / 6) ** alpha; a hypothesis scores log P / lp.

    log P only falls as a hypothesis grows, so unpenalised search prefers short outputs;
    dividing by a penalty that grows with length (alpha > 0) evens that out."""
    return ((5 + length) / 6) ** alpha


@dataclass(frozen=True)
class Hypothesis:
    """A partial or finished output: tokens generated so far (EOS last when finished), the sum
    of their log-probabilities, score = log_prob / length_penalty(len(tokens)), and parent: its
    prefix's index in the previous step's `kept` (-1 at the first step)."""

    tokens: tuple[int, ...]
    log_prob: float
    score: float
    finished: bool = False
    parent: int = -1


@dataclass(frozen=True)
class BeamStep:
    """Step t (0-based: choosing the t-th new token): the 2W best continuations split into the
    kept live hypotheses (best first), the finished ones (EOS) and the pruned rest."""

    step: int
    kept: tuple[Hypothesis, ...]
    finished: tuple[Hypothesis, ...]
    pruned: tuple[Hypothesis, ...]


@dataclass(frozen=True)
class BeamResult:
    """The whole search: every step, and the hypotheses the winner was chosen from (best first)."""

    width: int
    alpha: float
    eos_id: int | None
    steps: tuple[BeamStep, ...]
    final: tuple[Hypothesis, ...]

    @property
    def best(self) -> Hypothesis:
        return self.final[0]

    @property
    def tokens(self) -> list[int]:
        """The chosen path without its EOS: what the app traces attention over."""
        tokens = list(self.best.tokens)
        return tokens[:-1] if self.best.finished else tokens


def expand(
    live: Sequence[Hypothesis],
    log_probs: torch.Tensor,
    width: int,
    eos_id: int | None,
    alpha: float,
    step: int,
) -> BeamStep:
    """Rank every continuation of the live hypotheses (log_probs (R, V) of their next token) and
    split the best 2W into kept, finished (EOS ranked within the top W) and pruned."""
    cumulative = torch.tensor([h.log_prob for h in live], dtype=torch.float64, device=log_probs.device)
    total = (cumulative[:, None] + log_probs.double()).flatten()  # (R, V) -> (R*V,)
    n = min(2 * width, int(torch.isfinite(total).sum()))
    values, indices = total.topk(n)
    vocab = log_probs.size(1)
    kept: list[Hypothesis] = []
    finished: list[Hypothesis] = []
    pruned: list[Hypothesis] = []
    for rank, (value, index) in enumerate(zip(values.tolist(), indices.tolist(), strict=True)):
        parent, token = divmod(index, vocab)
        tokens = (*live[parent].tokens, token)
        ends = token == eos_id
        hyp = Hypothesis(tokens, value, value / length_penalty(len(tokens), alpha), ends, parent)
        if ends and rank < width:
            finished.append(hyp)
        elif not ends and len(kept) < width:
            kept.append(hyp)
        else:
            pruned.append(hyp)
    return BeamStep(step, tuple(kept), tuple(finished), tuple(pruned))


def search_is_over(
    done: Sequence[Hypothesis], live: Sequence[Hypothesis], width: int, alpha: float, max_new_tokens: int
) -> bool:
    """W finished, none live, or none live can still win: log P only falls and lp is at most
    lp(max_new_tokens), so a live hypothesis ends with a score of at most log P / lp(max)."""
    if not live or len(done) >= width:
        return True
    if not done:
        return False
    bound = max(h.log_prob for h in live) / length_penalty(max_new_tokens, alpha)
    return max(h.score for h in done) >= bound


def _check_search(max_new_tokens: int, alpha: float) -> None:
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ConfigError(f"max_new_tokens: expected a whole number >= 1, got {max_new_tokens!r}")
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and alpha >= 0):
        raise ConfigError(f"length penalty: alpha must be a number >= 0, got {alpha!r}")


@torch.inference_mode()
def beam_search(
    model: Model,
    source_ids: Sequence[int],
    width: int,
    max_new_tokens: int,
    *,
    alpha: float = DEFAULT_ALPHA,
    special: SpecialTokens | None = None,
    options: InferenceOptions = DEFAULT_OPTIONS,
) -> BeamResult:
    """Beam search of width 1..8 after a GPT prompt or for an encoder-decoder source (its ids
    then EOS). special: the EOS and banned ids (default `special_tokens(model)`; a tokenizer's
    stop_id and never_sampled for an imported GPT)."""
    width = check_beam_width(width)
    _check_search(max_new_tokens, alpha)
    special = special_tokens(model) if special is None else special
    stepper = stepper_for(model, source_ids, max_new_tokens, options)
    logits = stepper.start()  # (1, V)
    banned = torch.tensor(special.banned, dtype=torch.long, device=logits.device)
    live: tuple[Hypothesis, ...] = (Hypothesis((), 0.0, 0.0),)
    steps: list[BeamStep] = []
    done: list[Hypothesis] = []
    for t in range(max_new_tokens):
        if t:
            stepper.select(torch.tensor([h.parent for h in live], device=logits.device))
            logits = stepper.advance(torch.tensor([h.tokens[-1] for h in live], device=logits.device))
        log_probs = torch.log_softmax(logits.double(), dim=-1)  # (R, V), summed over many steps
        log_probs[:, banned] = float("-inf")
        steps.append(expand(live, log_probs, width, special.eos_id, alpha, t))
        done.extend(steps[-1].finished)
        live = steps[-1].kept
        if search_is_over(done, live, width, alpha, max_new_tokens):
            break
    else:
        done.extend(live)  # out of steps: the live hypotheses compete as they are
    if not done:
        raise ConfigError("beam search: every token is banned, there is nothing to write")
    final = sorted(done, key=lambda h: h.score, reverse=True)
    return BeamResult(width, float(alpha), special.eos_id, tuple(steps), tuple(final))
