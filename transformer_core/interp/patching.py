"""Activation patching per head (Meng et al. 2022; Wang et al. 2022, TransformerLens's
`get_act_patch_attn_head_out_all_pos`).

Why: ablation says whether a head matters at all; patching says whether a head carries the
information that separates two inputs. Run the corrupted input with one head's output (before
W_O, every position: TransformerLens's hook_z) taken from the clean run, and measure how much
of the clean behaviour comes back. The swap is a per-call InferenceOptions.head_patch, so no
weight is edited and nothing is stored on the model.

Metrics, on logits of the (patched) corrupted run:
- "logit_diff" (answer and wrong characters named): logit[answer] - logit[wrong] at the last
  position of a GPT, at the first output position of a Seq2Seq;
- "loss" (otherwise): the clean answer's loss, the mean next-token cross-entropy (nats) of the
  logits against the clean continuation. GPT: positions 0..T-2 scored against the clean text's
  characters 1..T-1. Seq2Seq: the decoder is teacher-forced on SOS + the clean text reversed
  and scored against the clean text reversed + EOS, whatever the source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.config import HeadPatch, InferenceOptions
from transformer_core.errors import InputError
from transformer_core.interp.importance import kinds_of
from transformer_core.io.data import encode_source
from transformer_core.io.tokenizer import Tokenizer
from transformer_core.losses import mean_token_nll
from transformer_core.models import GPT, Seq2Seq, require_next_token, require_transformer
from transformer_core.vocab import EOS_ID, SOS_ID

LOGIT_DIFF = "logit_diff"
LOSS = "loss"

Metric = Callable[[torch.Tensor], torch.Tensor]  # logits (B, T, V) -> scalar tensor
HeadKey = tuple[str, int, int]  # (kind, layer, head)


@dataclass(frozen=True)
class Patching:
    """Patching result. metric: LOGIT_DIFF or LOSS; clean / corrupted: the metric on the clean
    and on the corrupted run; heads: per kind an (L, H) array of the metric on the corrupted run
    with that one head patched from the clean run."""

    metric: str
    clean: float
    corrupted: float
    heads: dict[str, np.ndarray]


def logit_difference(logits: torch.Tensor, answer: int, wrong: int, position: int = -1) -> torch.Tensor:
    """logit[answer] - logit[wrong] at one position, averaged over the batch: logits (B, T, V)."""
    at = logits[:, position].float()  # (B, V)
    return (at[:, answer] - at[:, wrong]).mean()


def clean_answer_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (nats) of logits (B, T, V) against targets (B, T'), T' <= T:
    logits position t predicts targets[:, t] (a GPT passes its clean ids[1:])."""
    return mean_token_nll(logits[:, : targets.size(1)], targets)


def encode_pair(tokenizer: Tokenizer, clean: str, corrupted: str) -> tuple[list[int], list[int]]:
    """Token ids of two texts of equally many tokens; InputError for an empty text, unequal lengths
    or a character outside the vocabulary (named, so the user can fix it)."""
    if not clean or not corrupted:
        raise InputError("patching: the clean and the corrupted text must both be non-empty")
    ids = []
    for what, text in (("clean", clean), ("corrupted", corrupted)):
        encoded = tokenizer.encode_checked(text)
        if encoded.unknown:
            unknown = sorted({c for _, c in encoded.unknown})
            raise InputError(f"patching: the {what} text has characters outside the vocabulary: {unknown}")
        ids.append(encoded.ids)
    if len(ids[0]) != len(ids[1]):
        unit = "characters" if len(ids[0]) == len(clean) and len(ids[1]) == len(corrupted) else "tokens"
        raise InputError(
            f"patching: clean ({len(ids[0])} {unit}) and corrupted ({len(ids[1])}) must have "
            "equal length, so every position has a counterpart"
        )
    return ids[0], ids[1]


def character_id(tokenizer: Tokenizer, char: str, what: str) -> int:
    """The id of one known token (--answer / --wrong: a character, or a BPE model's one-token
    text such as "␣the"); InputError otherwise."""
    token = tokenizer.token_id(char)
    if token is None:
        unit = "token" if tokenizer.kind == "bpe" else "character"
        raise InputError(f"patching: {what} must be one {unit} of the vocabulary, got {char!r}")
    return token


@dataclass(frozen=True)
class PatchingRun:
    """What one patching experiment runs: the model inputs of the clean and of the corrupted
    run (GPT: (ids,), Seq2Seq: (src, tgt_in)), the metric on logits and its name."""

    clean: tuple[torch.Tensor, ...]
    corrupted: tuple[torch.Tensor, ...]
    metric: Metric
    metric_name: str


@dataclass(frozen=True)
class Contrast:
    """The two texts of a patching experiment (equal length) and, for a logit difference, the
    answer and the wrong character (both or neither)."""

    clean: str
    corrupted: str
    answer: str | None = None
    wrong: str | None = None


def patching_run(model: GPT | Seq2Seq, tokenizer: Tokenizer, contrast: Contrast) -> PatchingRun:
    """Inputs and metric for clean vs corrupted text (see the module docstring)."""
    clean, corrupted, answer, wrong = contrast.clean, contrast.corrupted, contrast.answer, contrast.wrong
    if (answer is None) != (wrong is None):
        raise InputError("patching: name both the answer and the wrong character, or neither")
    clean_ids, corrupted_ids = encode_pair(tokenizer, clean, corrupted)
    limit = model.config.max_len - (0 if isinstance(model, GPT) else 1)
    if len(clean_ids) > limit:
        raise InputError(f"patching: the texts have {len(clean_ids)} characters; the limit is {limit}")
    device = next(model.parameters()).device
    if isinstance(model, GPT):
        inputs = (torch.tensor([clean_ids], device=device),), (torch.tensor([corrupted_ids], device=device),)
        position, targets = -1, torch.tensor([clean_ids[1:]], device=device)
    else:
        reversed_ids = clean_ids[::-1]
        tgt_in = torch.tensor([[SOS_ID, *reversed_ids]], device=device)
        inputs = tuple((encode_source(tokenizer, [text], device), tgt_in) for text in (clean, corrupted))
        position, targets = 0, torch.tensor([[*reversed_ids, EOS_ID]], device=device)
    if answer is not None and wrong is not None:
        a = character_id(tokenizer, answer, "the answer")
        w = character_id(tokenizer, wrong, "the wrong character")
        return PatchingRun(*inputs, lambda logits: logit_difference(logits, a, w, position), LOGIT_DIFF)
    if targets.size(1) == 0:
        raise InputError("patching: the loss needs at least two characters (one to predict)")
    return PatchingRun(*inputs, lambda logits: clean_answer_loss(logits, targets), LOSS)


@torch.no_grad()
def head_outputs(model: GPT | Seq2Seq, inputs: tuple[torch.Tensor, ...]) -> dict[HeadKey, torch.Tensor]:
    """Every head's output before W_O on one run: (kind, layer, head) -> (B, T, d_head)."""
    capture = AttentionCapture()
    model(*inputs, capture=capture)
    values = {}
    for record in capture.records:
        z = record.z  # (B, H, T, d_head)
        values.update({(record.kind, record.layer, h): z[:, h] for h in range(z.size(1))})
    return values


@torch.no_grad()
def patch_each_head(
    model: GPT | Seq2Seq,
    corrupted: tuple[torch.Tensor, ...],
    values: dict[HeadKey, torch.Tensor],
    metric: Metric,
) -> dict[str, np.ndarray]:
    """Per kind (L, H): the metric of the corrupted run with head (kind, l, h) alone replaced by
    values[(kind, l, h)]. One forward per head."""
    L, H = model.config.n_layers, model.config.n_heads
    out = {kind: np.zeros((L, H)) for kind in kinds_of(model)}
    for (kind, layer, head), value in values.items():
        options = InferenceOptions(head_patch=HeadPatch({(kind, layer, head): value}))
        out[kind][layer, head] = float(metric(model(*corrupted, options=options)))
    return out


def activation_patching(
    model: GPT | Seq2Seq,
    tokenizer: Tokenizer,
    clean: str,
    corrupted: str,
    answer: str | None = None,
    wrong: str | None = None,
) -> Patching:
    """Patch every head of every kind from the clean into the corrupted run (module docstring)."""
    require_transformer(model, "patch")
    require_next_token(model, "patch")
    run = patching_run(model, tokenizer, Contrast(clean, corrupted, answer, wrong))
    with torch.no_grad():
        clean_metric = float(run.metric(model(*run.clean)))
        corrupted_metric = float(run.metric(model(*run.corrupted)))
    heads = patch_each_head(model, run.corrupted, head_outputs(model, run.clean), run.metric)
    return Patching(run.metric_name, clean_metric, corrupted_metric, heads)


def patching_json(result: Patching) -> dict[str, Any]:
    """{"metric", "clean", "corrupted", "heads": [L][H] of the first kind}, plus for a Seq2Seq
    "kinds": {kind: [L][H]} for every kind (encoder_self, decoder_self, cross)."""
    first, *others = result.heads
    payload: dict[str, Any] = {
        "metric": result.metric,
        "clean": result.clean,
        "corrupted": result.corrupted,
        "heads": result.heads[first].tolist(),
    }
    if others:
        payload["kinds"] = {kind: values.tolist() for kind, values in result.heads.items()}
    return payload


def patching_table(result: Patching) -> str:
    """A readable table: the clean and corrupted metric, then one row per kind and layer."""
    n_heads = next(iter(result.heads.values())).shape[1]
    lines = [
        f"metric {result.metric}: clean {result.clean:.4f}, corrupted {result.corrupted:.4f}",
        f"{'patched head':<16}" + "".join(f"{'head ' + str(h):>10}" for h in range(n_heads)),
    ]
    for kind, values in result.heads.items():
        for layer, row in enumerate(values):
            lines.append(f"{kind + ' layer ' + str(layer):<16}" + "".join(f"{x:>10.4f}" for x in row))
    return "\n".join(lines)


PATCH_HELP = (
    "Run the corrupted text with one head's output (before W_O, every position) taken from the clean run, "
    "for every head, and measure the clean answer's loss (nats; GPT: the clean text's next characters, "
    "seq2seq: the clean text reversed) or, with --answer C --wrong C, logit[answer] - logit[wrong] (GPT: "
    'last position, seq2seq: first output). --json prints {"metric", "clean", "corrupted", "heads": '
    '[layer][head]}; for a seq2seq "heads" is its first kind (encoder_self) and "kinds": {kind: '
    "[layer][head]} holds encoder_self, decoder_self and cross."
)
