"""What /gpt draws for one prompt: the sample, the text the maps trace (the prompt, or prompt
and sample), every self-attention head of it and the per-layer arrays of the query walk."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from attention_lab.models.explorer_compute import GPTView, Sample, gpt_view, view_and_sample
from attention_lab.viewmodel.attention import AttentionMaps, attention_maps
from attention_lab.viewmodel.beam import beam_samples
from transformer_core import InferenceOptions, InputError
from transformer_core.beam import BeamResult, beam_search
from transformer_core.interp import GPTTrace
from transformer_core.interp.attribution import sent_shares
from transformer_core.interp.generated import GeneratedWindow, token_window
from transformer_core.io import Checkpoint, Tokenizer
from transformer_core.stepping import SpecialTokens


@dataclass(frozen=True)
class SamplingSettings:
    """The sampler's settings as the page's widgets give them."""

    max_new: int
    temperature: float
    top_k: int
    top_p: float
    seed: int

    def as_json(self) -> dict[str, Any]:
        """The settings as a download records them (None: a filter that is off)."""
        return {
            "max_new_tokens": self.max_new,
            "temperature": self.temperature,
            "top_k": self.top_k or None,
            "top_p": self.top_p if self.top_p < 1 else None,
            "seed": self.seed,
        }

    def as_tuple(self) -> tuple[int, float, int, float, int]:
        """(max_new, temperature, top_k, top_p, seed): explorer_compute.sample's arguments."""
        return (self.max_new, self.temperature, self.top_k, self.top_p, self.seed)

    def described(self) -> list[str]:
        """The settings that shape the distribution, in words."""
        t = self.temperature
        words = [f"temperature {t:g}" if t > 0 else "greedy (temperature 0)"]
        return (
            words + [f"top-k {self.top_k}"] * bool(self.top_k) + [f"top-p {self.top_p:g}"] * (self.top_p < 1)
        )


@dataclass(frozen=True)
class BeamSettings:
    """Beam search instead of sampling: its width (1-8) and GNMT length-penalty strength."""

    width: int
    alpha: float

    def as_json(self) -> dict[str, Any]:
        return {"decoding": "beam", "width": self.width, "alpha": self.alpha}


@dataclass(frozen=True)
class GPTRequest:
    """An accepted prompt, the sampler's settings and how to draw the maps (the view's cache key)."""

    text: str
    options: InferenceOptions
    sampling: SamplingSettings  # its max_new is the beam search's too
    over_sample: bool  # the maps trace prompt + sample, not the prompt alone
    ablated: tuple[str, ...]  # "layer.head" of the heads switched off, named in the grid
    beam: BeamSettings | None = None  # beam search instead of sampling
    weighted: bool = False  # the maps show each key's share of ||alpha v W_O|| instead of alpha


@dataclass(frozen=True)
class GPTPage:
    """The prompt's trace and sample, and what the maps and the query walk show."""

    prompt: GPTView  # the prompt alone: its next-token distribution
    samples: list[Sample]
    window: GeneratedWindow | None  # prompt + sample as traced, when the maps trace it
    window_ids: tuple[int, ...] | None  # its tokens, where the text would not encode back to them
    view: GPTView  # what the maps and the walk show: the window's trace, else the prompt's
    maps: AttentionMaps
    beam: BeamResult | None = None  # the whole search, when the request asked for one

    @property
    def continuation(self) -> str:
        return "".join(s.text for s in self.samples)


def traced_window(
    tokenizer: Tokenizer, prompt: str, samples: list[Sample], max_len: int, on: bool
) -> tuple[GeneratedWindow | None, tuple[int, ...] | None]:
    """What the maps trace when the toggle is on: prompt + sample (the last max_len positions),
    and its token ids where the text would not encode back to them (a BPE sample is traced
    as sampled); (None, None) when off."""
    if not on:
        return None, None
    ids, window = token_window(
        tokenizer, prompt, tokenizer.encode(prompt), [s.token for s in samples], max_len
    )
    return window, None if len(ids) == len(window.text) else tuple(ids)


def gpt_page(ckpt: Checkpoint, request: GPTRequest) -> GPTPage:
    """One traced pass of the prompt that sampling goes on from, the window's trace when the
    maps follow the sample, and the grid of every head."""
    cfg, beam = ckpt.config, None
    if request.beam is None:
        prompt, samples = view_and_sample(ckpt, request.text, *request.sampling.as_tuple(), request.options)
    else:
        prompt = gpt_view(ckpt, request.text, request.options)
        beam = beam_of(ckpt, request.text, request.sampling.max_new, request.beam, request.options)
        samples = beam_samples(ckpt.tokenizer, beam)
    window, ids = traced_window(ckpt.tokenizer, request.text, samples, cfg.max_len, request.over_sample)
    view = gpt_view(ckpt, window.text, request.options, ids) if window else prompt
    titles = [
        [f"L{l} H{h}" + (" (ablated)" if f"{l}.{h}" in request.ablated else "") for h in range(cfg.n_heads)]
        for l in range(cfg.n_layers)
    ]
    shown = value_weighted_trace(ckpt, view) if request.weighted else view.trace
    maps = attention_maps(
        shown,
        "self",
        request.options,
        cell_titles=titles,
        boundary=window.generated_from if window else None,
        label=VALUE_WEIGHTED if request.weighted else None,
        value_name="share sent" if request.weighted else "weight",
    )
    return GPTPage(prompt, samples, window, ids, view, maps, beam)


VALUE_WEIGHTED = "value-weighted attention (shares of ‖α·v·W_O‖)"


def value_weighted_trace(ckpt: Checkpoint, view: GPTView) -> GPTTrace:
    """The view's trace with every head's weights replaced by each key's share of what it sends
    (sent_shares): the maps then show value-weighted attention, same layout and scale."""
    w_o = [block.self_attn.out_proj.weight.detach().float().cpu().numpy() for block in ckpt.model.blocks]
    shares = [sent_shares(rec["weights"], rec["v"], w_o[l]) for l, rec in enumerate(view.records)]
    return replace(view.trace, attention={"self": np.stack(shares)})


def beam_room(ckpt: Checkpoint, prompt_length: int) -> int:
    """How many tokens beam search may write after a prompt of prompt_length tokens."""
    return ckpt.config.max_len - prompt_length


def beam_of(
    ckpt: Checkpoint, text: str, max_new: int, beam: BeamSettings, options: InferenceOptions
) -> BeamResult:
    """Beam search of up to max_new tokens after the prompt, as many as the model's block leaves
    room for (the beams' caches do not slide); the tokenizer says what ends an output and what is
    never written (an imported GPT's specials). InputError where the prompt fills the block."""
    tok = ckpt.tokenizer
    ids = tok.encode_checked(text, max_chars=ckpt.config.max_len).ids
    max_new = min(max_new, beam_room(ckpt, len(ids)))
    if max_new < 1:
        raise InputError(
            f"The prompt fills the model's block of {ckpt.config.max_len} positions: beam search "
            "has no room to write. Shorten the prompt, or sample instead (sampling slides its window)."
        )
    special = SpecialTokens(tok.stop_id, tuple(tok.never_sampled))
    return beam_search(
        ckpt.model, ids, beam.width, max_new, alpha=beam.alpha, special=special, options=options
    )
