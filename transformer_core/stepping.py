"""Incremental decoders: every model kind behind one step interface.

A stepper holds R rows (hypotheses, or one sample) of a decoding in progress, with whatever
the model keeps between tokens (GPT and Seq2Seq: the self-attention KV cache; a recurrent
model: its hidden state). Beam search and seq2seq sampling are written once against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from transformer_core.config import DEFAULT_OPTIONS, InferenceOptions
from transformer_core.errors import InputError
from transformer_core.models import GPT, Model, Seq2Seq
from transformer_core.recurrent import RecurrentSeq2Seq
from transformer_core.vocab import EOS_ID, PAD_ID, SOS_ID, SPECIAL_TOKENS


class Stepper(Protocol):
    """Decoding state of R rows; `start` gives the first logits of one row."""

    def start(self) -> torch.Tensor:
        """Logits (1, V) of the first new token."""
        ...

    def advance(self, tokens: torch.Tensor) -> torch.Tensor:
        """Feed one token per row (R,) -> logits (R, V) of each row's next token."""
        ...

    def select(self, rows: torch.Tensor) -> None:
        """Keep rows `rows` (R',), repeats allowed, for the next `advance`."""
        ...


@dataclass(frozen=True)
class SpecialTokens:
    """eos_id: the token that ends an output (None: outputs never end early); banned: ids
    never written (e.g. PAD and SOS)."""

    eos_id: int | None
    banned: tuple[int, ...]


def special_tokens(model: Model) -> SpecialTokens:
    """The defaults: a character GPT writes on and never writes its specials; an
    encoder-decoder ends with EOS and never writes PAD or SOS (as greedy_decode)."""
    if isinstance(model, GPT):
        return SpecialTokens(None, tuple(range(len(SPECIAL_TOKENS))))
    return SpecialTokens(EOS_ID, (PAD_ID, SOS_ID))


def _device(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def _source(model: torch.nn.Module, source_ids: Sequence[int]) -> torch.Tensor:
    """(1, Ts) source ids on the model's device: the text's ids then EOS (`encode_source`)."""
    if not source_ids:
        raise InputError("source: give at least one token to decode")
    return torch.tensor([list(source_ids)], device=_device(model))


class GPTStepper:
    """A GPT continuing a prompt with its KV cache; the prompt keeps its last tokens so that
    prompt + new tokens fit the model's block (max_len)."""

    def __init__(
        self, model: GPT, prompt_ids: Sequence[int], max_new_tokens: int, options: InferenceOptions
    ) -> None:
        window = model.config.max_len - max_new_tokens
        if window < 1:
            raise InputError(
                f"max_new_tokens: {max_new_tokens} new tokens leave no room for the prompt in the "
                f"model's block of {model.config.max_len}"
            )
        if not prompt_ids:
            raise InputError("prompt: give at least one token to continue")
        self.model, self.options, self.cache = model, options, model.new_cache()
        self.dropped = max(0, len(prompt_ids) - window)  # prompt tokens cut from the front
        self.prompt = torch.tensor([list(prompt_ids)[self.dropped :]], device=_device(model))  # (1, T)

    def start(self) -> torch.Tensor:
        return self.model(self.prompt, options=self.options, cache=self.cache, last_only=True)[:, -1]

    def advance(self, tokens: torch.Tensor) -> torch.Tensor:
        x = tokens[:, None]  # (R,) -> (R, 1)
        return self.model(x, options=self.options, cache=self.cache, last_only=True)[:, -1]

    def select(self, rows: torch.Tensor) -> None:
        self.cache.reorder(rows)


class Seq2SeqStepper:
    """An encoder-decoder Transformer: the source encoded once, the decoder's self-attention
    cached, the memory's rows following the hypotheses."""

    def __init__(
        self, model: Seq2Seq, source_ids: Sequence[int], max_new_tokens: int, options: InferenceOptions
    ) -> None:
        self.model, self.options, self.src = model, options, _source(model, source_ids)  # (R, Ts)
        src = self.src
        self.memory = model.encode(src, options=options)  # (R, Ts, d_model)
        self.cache = model.new_cache()

    def start(self) -> torch.Tensor:
        return self.advance(torch.full((1,), SOS_ID, device=self.src.device))

    def advance(self, tokens: torch.Tensor) -> torch.Tensor:
        logits = self.model.decode(
            tokens[:, None], self.memory, self.src, options=self.options, cache=self.cache
        )  # (R, 1, V)
        return logits[:, -1]

    def select(self, rows: torch.Tensor) -> None:
        self.src, self.memory = self.src.index_select(0, rows), self.memory.index_select(0, rows)
        self.cache.reorder(rows)


class RecurrentStepper:
    """A GRU encoder-decoder: the source encoded once, the decoder state carried per row."""

    def __init__(
        self,
        model: RecurrentSeq2Seq,
        source_ids: Sequence[int],
        max_new_tokens: int,
        options: InferenceOptions,
    ) -> None:
        src = _source(model, source_ids)  # (1, Ts)
        self.model, self.options, self.device = model, options, src.device
        self.state = model.start(model.encode(src, options=options), src, options)

    def start(self) -> torch.Tensor:
        return self.advance(torch.full((1,), SOS_ID, device=self.device))

    def advance(self, tokens: torch.Tensor) -> torch.Tensor:
        step = self.model.step(tokens, self.state, self.options)
        self.state = step.state
        return step.logits  # (R, V)

    def select(self, rows: torch.Tensor) -> None:
        self.state = self.state.select(rows)


#: model class -> its stepper; a new model kind is a line here
STEPPERS: dict[type[torch.nn.Module], type[GPTStepper | Seq2SeqStepper | RecurrentStepper]] = {
    GPT: GPTStepper,
    Seq2Seq: Seq2SeqStepper,
    RecurrentSeq2Seq: RecurrentStepper,
}


def stepper_for(
    model: Model, source_ids: Sequence[int], max_new_tokens: int, options: InferenceOptions = DEFAULT_OPTIONS
) -> Stepper:
    """The stepper of one input: a GPT's prompt, or an encoder-decoder's source ids (the text's
    ids then EOS, as `encode_source` makes them)."""
    return STEPPERS[type(model)](model, source_ids, max_new_tokens, options)  # type: ignore[arg-type]
