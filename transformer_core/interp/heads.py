"""Head detectors: what kind of attention each head does, as template scores.

Why: one home for head scores, defined the way TransformerLens's head detector defines them,
so a head's label ("previous-token", "induction", ...) is a number anyone can recompute.

A template D (Tq, Tk) marks the keys a head of that kind should attend to from each query.
The score of an attention pattern A (Tq, Tk) is sum(A * D) / sum(A) over the rows where the
template marks at least one key (TransformerLens's `detect_head` with error_measure "mul"
sums over every row; `rows="all"` gives exactly that). Each row of A sums to 1, so the score
is the mean over those rows of the weight on the template's keys: a pure previous-token head
scores 1.0 and a uniform causal head 1/(i+1) in row i.

Every score is defined per attention kind or is None (not applicable), see `APPLIES`.
Pure functions on numpy arrays; `detect_heads` runs a model over a probe set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.models import GPT, Seq2Seq
from transformer_core.vocab import EOS_ID, SOS_ID

SELF_KINDS = ("self", "encoder_self", "decoder_self")
TEMPLATE_SCORES = (
    "previous_token",
    "diagonal",
    "first_token",
    "duplicate_token",
    "induction",
    "anti_diagonal",
    "monotonic",
)
SCORES = (*TEMPLATE_SCORES, "entropy", "mean_distance")
CLI_SCORES = tuple(s for s in SCORES if s != "monotonic")  # the `heads` command's contract keys

APPLIES: dict[str, tuple[str, ...]] = {  # score -> kinds it is defined for; elsewhere None
    "previous_token": SELF_KINDS,
    "diagonal": SELF_KINDS,
    "first_token": (*SELF_KINDS, "cross"),
    "duplicate_token": SELF_KINDS,
    "induction": SELF_KINDS,
    "anti_diagonal": ("cross",),
    "monotonic": ("cross",),
    "entropy": (*SELF_KINDS, "cross"),
    "mean_distance": SELF_KINDS,
}

DESCRIPTIONS: dict[str, str] = {
    "previous_token": "weight on the token just before the query (key i-1 from query i)",
    "diagonal": "weight on the query's own position (the current token)",
    "first_token": "weight on the first key: an attention sink, where a head parks unused weight",
    "duplicate_token": "weight on earlier keys holding the same token as the query",
    "induction": "weight on the key right after an earlier copy of the query's token "
    "(on a random segment repeated twice): A B ... A -> B",
    "anti_diagonal": "reversal alignment: output position t reads source position n-1-t",
    "monotonic": "order-preserving alignment: output position t reads the source position at the "
    "same relative place (the diagonal stretched to both lengths)",
    "entropy": "spread of each row's weights in nats: 0 = one key, log(keys) = uniform",
    "mean_distance": "mean |query - key| under the weights: how far back (or ahead) a head looks",
}


# ---------------------------------------------------------------- templates (pure functions)


def previous_token_template(t: int) -> np.ndarray:
    """(t, t) with D[i, i-1] = 1: the previous-token head."""
    return np.eye(t, k=-1, dtype=np.float64)


def diagonal_template(t: int) -> np.ndarray:
    """(t, t) with D[i, i] = 1: the current-token head."""
    return np.eye(t, dtype=np.float64)


def first_token_template(tq: int, tk: int) -> np.ndarray:
    """(tq, tk) with D[:, 0] = 1: the attention sink on the first key."""
    d = np.zeros((tq, tk), dtype=np.float64)
    d[:, 0] = 1.0
    return d


def duplicate_token_template(tokens: Sequence[int]) -> np.ndarray:
    """(t, t) with D[i, j] = 1 where j < i and tokens[j] == tokens[i] (TransformerLens's)."""
    ids = np.asarray(tokens)
    same = ids[:, None] == ids[None, :]
    return np.tril(same, k=-1).astype(np.float64)


def induction_template(tokens: Sequence[int]) -> np.ndarray:
    """(t, t) with D[i, j] = 1 where j <= i and tokens[j-1] == tokens[i] for an earlier j-1 < i:
    the key right after a previous occurrence of the query's token (TransformerLens's pattern:
    the duplicate-token template shifted one key to the right)."""
    dup = duplicate_token_template(tokens)
    d = np.zeros_like(dup)
    d[:, 1:] = dup[:, :-1]
    return np.tril(d)


def anti_diagonal_template(tq: int, tk: int, n: int) -> np.ndarray:
    """(tq, tk) with D[t, n-1-t] = 1 for t < n: the reversal alignment of a cross-attention
    whose queries are SOS + output and keys the n source characters (+ EOS)."""
    d = np.zeros((tq, tk), dtype=np.float64)
    for t in range(min(n, tq)):
        if 0 <= n - 1 - t < tk:
            d[t, n - 1 - t] = 1.0
    return d


def monotonic_template(tq: int, tk: int) -> np.ndarray:
    """(tq, tk) with one key per row on the diagonal stretched to both lengths:
    D[t, round(t (tk-1) / (tq-1))] = 1 (order-preserving alignment, e.g. copying)."""
    d = np.zeros((tq, tk), dtype=np.float64)
    cols = np.rint(np.arange(tq) * (tk - 1) / max(tq - 1, 1)).astype(int)
    d[np.arange(tq), cols] = 1.0
    return d


# ---------------------------------------------------------------- scores (pure functions)


def template_score(
    pattern: np.ndarray,
    template: np.ndarray,
    *,
    rows: Literal["defined", "all"] = "defined",
    exclude_first: bool = False,
    exclude_current: bool = False,
) -> np.ndarray:
    """sum(A * D) / sum(A) per head: pattern (..., Tq, Tk), template (Tq, Tk) -> (...).

    rows="defined" counts only rows where the template marks a key (a pure previous-token
    pattern scores 1.0); rows="all" counts every row, as TransformerLens's detect_head does.
    exclude_first / exclude_current zero the first key / the diagonal of A first, like
    detect_head's exclude_bos / exclude_current_token. NaN when nothing is counted.
    """
    a = np.array(pattern, dtype=np.float64)
    if exclude_first:
        a[..., :, 0] = 0.0
    if exclude_current:
        n = min(a.shape[-2:])
        a[..., np.arange(n), np.arange(n)] = 0.0
    if rows == "defined":
        a = a * (template.sum(-1) > 0)[:, None]
    total = a.sum(axis=(-2, -1))
    hit = (a * template).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, hit / np.where(total > 0, total, 1.0), np.nan)


def anti_diagonal_scores(cross: np.ndarray, n: int) -> np.ndarray:
    """Share of cross-attention weight on the reversal alignment, per head: (L, H, Tt, Ts) -> (L, H).

    Target position t (SOS + output) should read source position n-1-t of the n-character
    text: 1.0 for a perfect anti-diagonal, about 1/Ts for a flat head. Rows past the text
    do not count; NaN where no row does (n = 0).
    """
    return template_score(cross, anti_diagonal_template(*cross.shape[-2:], n)).astype(np.float32)


def entropy_score(pattern: np.ndarray, row_mask: np.ndarray | None = None) -> np.ndarray:
    """Mean over rows of -sum_j A log A in nats: pattern (..., Tq, Tk) -> (...).
    row_mask (Tq,) selects the rows that count (default: rows with any weight)."""
    a = np.asarray(pattern, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0)), 0.0).sum(-1)  # (..., Tq)
    keep = (a.sum(-1) > 0) if row_mask is None else np.broadcast_to(row_mask, h.shape)
    return (h * keep).sum(-1) / np.maximum(keep.sum(-1), 1)


def mean_distance_score(pattern: np.ndarray) -> np.ndarray:
    """Mean over rows of sum_j A[i, j] |i - j| (positions): pattern (..., T, T) -> (...)."""
    a = np.asarray(pattern, dtype=np.float64)
    tq, tk = a.shape[-2:]
    dist = np.abs(np.arange(tq)[:, None] - np.arange(tk)[None, :])
    per_row = (a * dist).sum(-1)
    keep = a.sum(-1) > 0
    return (per_row * keep).sum(-1) / np.maximum(keep.sum(-1), 1)


# ---------------------------------------------------------------- one probe, every score


@dataclass(frozen=True)
class ProbePatterns:
    """Attention of one probe sequence: kind -> (L, H, Tq, Tk) weights, and the tokens of the
    query and key sides per kind (ids). `n_source` is the source text length (reversal)."""

    weights: dict[str, np.ndarray]
    query_tokens: dict[str, list[int]]
    key_tokens: dict[str, list[int]]
    n_source: int | None = None


def score_patterns(
    probe: ProbePatterns,
    scores: Sequence[str] = SCORES,
    custom: dict[str, Callable[[list[int], list[int]], np.ndarray]] | None = None,
) -> dict[str, dict[str, np.ndarray]]:
    """Every score of every head of one probe: {kind: {score: (L, H)}}; NaN where a score
    does not apply to the kind or the template marks nothing in this probe.

    custom maps a name to a user template fn(query_tokens, key_tokens) -> (Tq, Tk) array,
    scored like the built-in ones for every kind."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for kind, w in probe.weights.items():
        L, H, tq, tk = w.shape
        qt, kt = probe.query_tokens[kind], probe.key_tokens[kind]
        res: dict[str, np.ndarray] = {}
        nan = np.full((L, H), np.nan)
        for name in scores:
            if kind not in APPLIES[name]:
                res[name] = nan
                continue
            if name == "entropy":
                res[name] = entropy_score(w)
            elif name == "mean_distance":
                res[name] = mean_distance_score(w)
            else:
                template = _template(name, qt, kt, tq, tk, probe.n_source)
                res[name] = nan if template is None else template_score(w, template)
        for name, fn in (custom or {}).items():
            template = np.asarray(fn(qt, kt), dtype=np.float64)
            if template.shape != (tq, tk):
                raise ValueError(f"template {name!r}: expected shape {(tq, tk)}, got {template.shape}")
            res[name] = template_score(w, template)
        out[kind] = res
    return out


def _template(
    name: str, qt: list[int], kt: list[int], tq: int, tk: int, n_source: int | None
) -> np.ndarray | None:
    if name == "previous_token":
        return previous_token_template(tq)
    if name == "diagonal":
        return diagonal_template(tq)
    if name == "first_token":
        return first_token_template(tq, tk)
    if name == "duplicate_token":
        return duplicate_token_template(qt)
    if name == "induction":
        return induction_template(qt)
    if name == "anti_diagonal":
        return None if n_source is None else anti_diagonal_template(tq, tk, n_source)
    if name == "monotonic":
        return monotonic_template(tq, tk)
    raise KeyError(name)


def average_scores(per_probe: list[dict[str, dict[str, np.ndarray]]]) -> dict[str, dict[str, np.ndarray]]:
    """Mean over probes, ignoring probes where a score is NaN (e.g. no duplicate tokens):
    as detect_head, which averages one score per sequence."""
    kinds = per_probe[0].keys()
    out: dict[str, dict[str, np.ndarray]] = {}
    for kind in kinds:
        out[kind] = {}
        for name in per_probe[0][kind]:
            stack = np.stack([p[kind][name] for p in per_probe])
            with np.errstate(invalid="ignore"), _quiet_nanmean():
                out[kind][name] = np.nanmean(stack, axis=0)
    return out


class _quiet_nanmean:
    """Silence numpy's 'Mean of empty slice' warning: an all-NaN column stays NaN on purpose."""

    def __enter__(self) -> None:
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", category=RuntimeWarning)

    def __exit__(self, *exc: object) -> None:
        self._ctx.__exit__(*exc)


# ---------------------------------------------------------------- probes and models


def repeated_random_tokens(
    n_sequences: int, segment: int, vocab: Sequence[int], seed: int = 0
) -> list[list[int]]:
    """Sequences of a random segment of `segment` tokens from `vocab` repeated twice: on the
    second copy an induction head attends to the token after the query's first occurrence."""
    rng = np.random.default_rng(seed)
    choices = np.asarray(vocab)
    return [list(np.tile(rng.choice(choices, size=segment), 2).tolist()) for _ in range(n_sequences)]


REVERSAL_PROBE = "attention"
DEFAULT_PROBES = (
    "The return statement",
    "def f(x): return x + 1",
    "the cat sat on the mat and the dog sat on the log",
    "for i in range(10): print(i)",
)


@dataclass(frozen=True)
class ProbeSet:
    """What the detectors run on: `texts` for every score but induction, `repeats` (token id
    sequences of a random segment repeated twice) for induction."""

    texts: tuple[str, ...]
    repeats: tuple[tuple[int, ...], ...] = field(default=())


def default_probe_set(
    tokenizer: Tokenizer,
    arch: str,
    texts: Sequence[str] | None = None,
    max_len: int = 128,
    seed: int = 0,
) -> ProbeSet:
    """Default probes for a model: texts restricted to its vocabulary (unknown characters
    dropped; a text that becomes empty is replaced by its alphabet), and 4 repeated random
    segments of its ordinary characters (GPT: 20 characters; reversal: 5, so that the source
    fits the trained lengths 3-10). Reversal texts default to "attention" plus 7 random
    strings of lengths 3-10 (what the models were trained on)."""
    alphabet = tokenizer.ordinary_ids
    limit = max_len if arch == "gpt" else max_len - 2
    rng = np.random.default_rng(seed)
    if texts is None and arch == "gpt":
        texts = DEFAULT_PROBES
    elif texts is None:
        chars = list(tokenizer.decode(alphabet))
        texts = [REVERSAL_PROBE] + ["".join(rng.choice(chars, size=n)) for n in (3, 4, 5, 6, 7, 8, 10)]
    kept = []
    for t in texts:
        clean = tokenizer.keep_known(t)[:limit] or tokenizer.decode(alphabet[:limit])
        kept.append(clean)
    segment = min(20 if arch == "gpt" else 5, limit // 2)
    repeats = repeated_random_tokens(4, segment, alphabet, seed + 1)
    return ProbeSet(tuple(kept), tuple(tuple(r) for r in repeats))


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def probe_patterns(model: GPT | Seq2Seq, sequences: Sequence[Sequence[int]]) -> list[ProbePatterns]:
    """Run each token-id sequence through the model with a capture; one ProbePatterns each.

    GPT: the sequence is the input. Seq2Seq: it is the source text; the decoder is teacher
    forced on its true reversal (SOS + reversed text), source tokens are text + EOS."""
    out = []
    device = _device(model)
    for seq in sequences:
        cap = AttentionCapture()
        ids = list(seq)
        if isinstance(model, GPT):
            model(torch.tensor([ids], device=device), capture=cap)
            w = {"self": cap.weights("self").float().cpu().numpy()}
            out.append(ProbePatterns(w, {"self": ids}, {"self": ids}))
        else:
            src_ids = [*ids, EOS_ID]
            tgt_ids = [SOS_ID, *ids[::-1]]
            model(torch.tensor([src_ids], device=device), torch.tensor([tgt_ids], device=device), capture=cap)
            w = {k: cap.weights(k).float().cpu().numpy() for k in ("encoder_self", "decoder_self", "cross")}
            q = {"encoder_self": src_ids, "decoder_self": tgt_ids, "cross": tgt_ids}
            k = {"encoder_self": src_ids, "decoder_self": tgt_ids, "cross": src_ids}
            out.append(ProbePatterns(w, q, k, n_source=len(ids)))
    return out


@dataclass(frozen=True)
class HeadScores:
    """Detector scores of every head: scores[kind][score] is (L, H), NaN = not applicable.
    patterns[kind] is each head's pattern on the first text probe (L, H, Tq, Tk)
    with its token labels, for small multiples."""

    scores: dict[str, dict[str, np.ndarray]]
    patterns: dict[str, np.ndarray]
    pattern_tokens: dict[str, tuple[list[str], list[str]]]


def detect_heads(
    model: GPT | Seq2Seq,
    tokenizer: Tokenizer,
    probes: ProbeSet,
    custom: dict[str, Callable[[list[int], list[int]], np.ndarray]] | None = None,
) -> HeadScores:
    """Every detector score of every head, averaged over the probe set.

    Induction is scored on `probes.repeats` only (where it is well defined: the second copy
    of a random segment), every other score on `probes.texts`."""
    text_ids = [tokenizer.encode(t) for t in probes.texts]
    text_patterns = probe_patterns(model, text_ids)
    rest = [s for s in SCORES if s != "induction"]
    per_text = [score_patterns(p, rest, custom) for p in text_patterns]
    scores = average_scores(per_text)
    if probes.repeats:
        rep = [score_patterns(p, ("induction",)) for p in probe_patterns(model, probes.repeats)]
        for kind, vals in average_scores(rep).items():
            scores[kind]["induction"] = vals["induction"]
    else:
        for kind in scores:
            scores[kind]["induction"] = np.full_like(scores[kind]["entropy"], np.nan)
    first = text_patterns[0]
    labels = {
        kind: (
            tokenizer.token_labels(first.query_tokens[kind]),
            tokenizer.token_labels(first.key_tokens[kind]),
        )
        for kind in first.weights
    }
    ordered = {kind: {name: scores[kind][name] for name in [*SCORES, *(custom or {})]} for kind in scores}
    return HeadScores(ordered, dict(first.weights), labels)
