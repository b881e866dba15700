"""`python -m transformer_core eval`: each task's own measure of a checkpoint on held-out data."""

from __future__ import annotations

import dataclasses
from typing import Any

from transformer_core.errors import ConfigError
from transformer_core.io import Checkpoint, load_corpus
from transformer_core.train.evaluation import evaluate_lm, evaluate_reversal
from transformer_core.train.mlm import MaskedLanguageModelTask
from transformer_core.train.tasks import LanguageModelTask


def evaluate_checkpoint(
    ckpt: Checkpoint, lengths: str, samples: int, seed: int, corpus: str | None
) -> tuple[dict[str, Any], str]:
    """(the metrics, their text for people): reversal exact match and token accuracy per length
    ("3,5,7"), a GPT's validation loss, a masked LM's accuracy at hidden characters beside chance."""
    if ckpt.task == "reverse":
        try:
            chosen = [int(x) for x in lengths.split(",")]
        except ValueError:
            raise ConfigError(f"lengths: {lengths!r} is not a comma-separated list of integers") from None
        if any(n < 1 or n > ckpt.config.max_len - 2 for n in chosen):
            raise ConfigError(f"lengths: each must be in 1..{ckpt.config.max_len - 2}")
        result = evaluate_reversal(ckpt.model, ckpt.tokenizer, chosen, samples, seed)
        return result, "\n".join(
            f"length {n:>3}: exact match {result['exact_match'][str(n)]:.3f}  "
            f"token accuracy {result['token_accuracy'][str(n)]:.3f}"
            for n in chosen
        )
    if ckpt.task == "mlm":
        task = MaskedLanguageModelTask.from_text(load_corpus(corpus), ckpt.config.max_len)
        result = dataclasses.replace(task, eval_batches=max(1, samples // 32)).evaluate(ckpt.model, seed=seed)
        return result, (
            f"masked accuracy {result['masked_accuracy']:.3f} (chance {result['chance_accuracy']:.3f}), "
            f"val_loss {result['val_loss']:.4f} nats per hidden char"
        )
    task = LanguageModelTask.from_text(ckpt.tokenizer, load_corpus(corpus), ckpt.config.max_len)
    result = evaluate_lm(
        ckpt.model, task.val_ids, ckpt.config.max_len, batches=max(1, samples // 32), seed=seed
    )
    unit = "token" if ckpt.tokenizer.kind == "bpe" else "char"  # a BPE position is a piece of a word
    return result, f"val_loss {result['val_loss']:.4f} nats/{unit}, perplexity {result['perplexity']:.3f}"
