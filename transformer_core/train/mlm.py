"""The masked-language-model task: guess the characters hidden behind [MASK].

Why: chapter 002 contrasts BERT (an encoder trained to fill blanks, reading both sides)
with GPT (a decoder trained to continue, reading the left only). This task trains the
encoder-only `BERT` on the GPTs' corpus, so the two can be compared on the same text.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from transformer_core.interp.trace import trace_gpt
from transformer_core.io.data import MASK_CHAR, lm_batch, mask_tokens, mlm_tokenizer, split_ids
from transformer_core.io.tokenizer import CharTokenizer, Tokenizer
from transformer_core.losses import mean_token_nll, perplexity
from transformer_core.models import BERT
from transformer_core.train.tasks import Batch, cross_entropy_loss
from transformer_core.vocab import UNK_ID

MLM_PROBE = f"The ret{MASK_CHAR}rn statement"
MASK_RATE = 0.15


@dataclass(frozen=True)
class MaskedLanguageModelTask:
    """Windows of block_size characters with MASK_RATE of them hidden (train_ids / val_ids
    (N,) split 90 / 10 as the GPTs'); the loss counts the hidden positions only.
    Build it with `from_text`."""

    tokenizer: CharTokenizer
    train_ids: torch.Tensor
    val_ids: torch.Tensor
    block_size: int = 128
    eval_batches: int = 20
    probe: str = MLM_PROBE
    name: str = "mlm"

    @classmethod
    def from_text(cls, text: str, block_size: int = 128) -> MaskedLanguageModelTask:
        tokenizer = mlm_tokenizer(text)
        ids = torch.tensor(tokenizer.encode(text), dtype=torch.long)
        train_ids, val_ids = split_ids(ids)
        return cls(tokenizer, train_ids, val_ids, min(block_size, len(val_ids) - 2))

    @property
    def mask_id(self) -> int:
        return self.tokenizer.stoi[MASK_CHAR]

    def masked(
        self, ids: torch.Tensor, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Random windows of ids, masked: inputs (B, T) and targets (B, T) (-100 where not hidden)."""
        x, _ = lm_batch(ids, self.block_size, batch_size, generator)
        ordinary = torch.tensor([i for i in self.tokenizer.ordinary_ids if i != self.mask_id])
        return mask_tokens(x, self.mask_id, ordinary, generator, MASK_RATE)

    def batch(self, batch_size: int, generator: torch.Generator, device: torch.device) -> Batch:
        inputs, targets = self.masked(self.train_ids, batch_size, generator)
        return Batch((inputs.to(device),), targets.to(device))

    def loss(self, model: nn.Module, batch: Batch, label_smoothing: float = 0.0) -> tuple[torch.Tensor, int]:
        return cross_entropy_loss(model, batch, label_smoothing, ignore_index=-100)

    @torch.no_grad()
    def evaluate(self, model: nn.Module, batch_size: int = 32, seed: int = 1234) -> dict[str, Any]:
        """On held-out windows: loss (nats per hidden character) and accuracy at the hidden
        positions, beside chance: always guessing the training text's most common character."""
        was_training = model.training
        model.eval()
        device = next(model.parameters()).device
        generator = torch.Generator().manual_seed(seed)
        total = correct = common = count = 0.0
        top = Counter(self.train_ids.tolist()).most_common(1)[0][0]
        for _ in range(self.eval_batches):
            inputs, targets = self.masked(self.val_ids, batch_size, generator)
            inputs, targets = inputs.to(device), targets.to(device)
            logits = model(inputs)  # (B, T, V)
            hidden = targets != -100
            n = int(hidden.sum())
            total += float(mean_token_nll(logits, targets, ignore_index=-100)) * n
            correct += int((logits.argmax(-1) == targets)[hidden].sum())
            common += int((targets[hidden] == top).sum())
            count += n
        model.train(was_training)
        loss = total / count
        return {
            "val_loss": loss,
            "perplexity": perplexity(loss),
            "masked_accuracy": correct / count,
            "chance_accuracy": common / count,
        }

    def snapshot(self, model: nn.Module) -> dict[str, Any]:
        was_training = model.training
        model.eval()
        result = trace_gpt(model, self.tokenizer, self.tokenizer.keep_known(self.probe))
        model.train(was_training)
        return {**result.attention, "source_tokens": result.tokens}


Blanks = list[tuple[torch.Tensor, torch.Tensor]]


def held_out_blanks(
    task: MaskedLanguageModelTask, batches: int = 8, batch_size: int = 32, window: int = 64, seed: int = 1234
) -> Blanks:
    """The held-out masked windows every reader is scored on, as (inputs, targets) pairs of
    (batch_size, window) (see `masked`); position 0 is never scored: a GPT has nothing to read there."""
    generator = torch.Generator().manual_seed(seed)
    task = replace(task, block_size=min(window, task.block_size))
    blanks = []
    for _ in range(batches):
        inputs, targets = task.masked(task.val_ids, batch_size, generator)
        targets[:, 0] = -100
        blanks.append((inputs, targets))
    return blanks


@torch.no_grad()
def fill_accuracy(
    task: MaskedLanguageModelTask, model: nn.Module, tokenizer: Tokenizer, blanks: Blanks
) -> float:
    """Accuracy at the hidden characters of `blanks`. A masked LM (`BERT`) reads its inputs: both
    sides, the window's other blanks hidden too; a causal GPT reads the true characters on the
    left only (row t - 1 guesses t). tokenizer: the model's (ids are mapped by character)."""
    device = next(model.parameters()).device
    to_model = torch.tensor([tokenizer.token_id(c) or UNK_ID for c in task.tokenizer.vocab])  # (V_task,)
    right = count = 0
    for inputs, targets in blanks:
        hidden = targets != -100  # (B, T)
        if isinstance(model, BERT):
            hit = model(to_model[inputs].to(device)).argmax(-1).cpu() == to_model[targets.clamp(min=0)]
        else:
            original = to_model[torch.where(hidden, targets, inputs)]  # (B, T): the window before masking
            hit = torch.zeros_like(hidden)
            hit[:, 1:] = model(original.to(device)).argmax(-1).cpu()[:, :-1] == original[:, 1:]
        right += int(hit[hidden].sum())
        count += int(hidden.sum())
    return right / count


def chance_accuracy(task: MaskedLanguageModelTask, blanks: Blanks) -> float:
    """Accuracy at the hidden characters of `blanks` of always guessing the training text's most
    common character."""
    top = Counter(task.train_ids.tolist()).most_common(1)[0][0]
    hidden = [targets[targets != -100] for _, targets in blanks]
    return float(sum(int((h == top).sum()) for h in hidden) / sum(len(h) for h in hidden))
