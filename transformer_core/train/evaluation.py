"""Metrics: reversal accuracy per length, language-model loss in nats per character."""

from __future__ import annotations

import torch

from transformer_core.generation import greedy_decode
from transformer_core.io.data import lm_batch, random_strings, reversal_batch
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.losses import mean_token_nll, perplexity
from transformer_core.models import GPT, EncoderDecoder
from transformer_core.vocab import PAD_ID


@torch.no_grad()
def evaluate_reversal(
    model: EncoderDecoder,
    tokenizer: CharTokenizer,
    lengths: list[int],
    samples: int = 200,
    seed: int = 1234,
    batch_size: int = 200,
) -> dict[str, dict[str, float]]:
    """Per length: greedy exact match (whole string right) and teacher-forced token
    accuracy (each next character right given the true prefix, EOS included)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    exact, token = {}, {}
    for length in lengths:
        strings = random_strings(samples, length, length, generator)
        n_exact = n_correct = n_tokens = 0
        for start in range(0, samples, batch_size):
            chunk = strings[start : start + batch_size]
            batch = reversal_batch(tokenizer, chunk, device)
            outputs = greedy_decode(model, batch.src, length + 2)
            n_exact += sum(tokenizer.decode(o) == s[::-1] for o, s in zip(outputs, chunk, strict=True))
            logits = model(batch.src, batch.tgt_in)
            keep = batch.tgt_out != PAD_ID
            n_correct += int(((logits.argmax(-1) == batch.tgt_out) & keep).sum())
            n_tokens += int(keep.sum())
        exact[str(length)] = n_exact / samples
        token[str(length)] = n_correct / n_tokens
    model.train(was_training)
    return {"exact_match": exact, "token_accuracy": token}


@torch.no_grad()
def evaluate_lm(
    model: GPT, ids: torch.Tensor, block_size: int, batches: int = 20, batch_size: int = 32, seed: int = 1234
) -> dict[str, float]:
    """Mean cross-entropy (nats per character) on random windows of ids, and perplexity."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(seed)
    block_size = min(block_size, len(ids) - 2)
    total = 0.0
    for _ in range(batches):
        x, y = lm_batch(ids, block_size, batch_size, generator)
        logits = model(x.to(device))
        total += float(mean_token_nll(logits, y.to(device), ignore_index=-100))
    model.train(was_training)
    loss = total / batches
    return {"val_loss": loss, "perplexity": perplexity(loss)}
