"""What /gpt draws for one prompt: the sample, the text the maps trace (the prompt, or prompt
and sample), every self-attention head of it and the per-layer arrays of the query walk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attention_lab.models.explorer_compute import GPTView, Sample, gpt_view, view_and_sample
from attention_lab.viewmodel.attention import AttentionMaps, attention_maps
from transformer_core import InferenceOptions
from transformer_core.interp.generated import GeneratedWindow, token_window
from transformer_core.io import Checkpoint, Tokenizer


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
class GPTRequest:
    """An accepted prompt, the sampler's settings and how to draw the maps (the view's cache key)."""

    text: str
    options: InferenceOptions
    sampling: SamplingSettings
    over_sample: bool  # the maps trace prompt + sample, not the prompt alone
    ablated: tuple[str, ...]  # "layer.head" of the heads switched off, named in the grid


@dataclass(frozen=True)
class GPTPage:
    """The prompt's trace and sample, and what the maps and the query walk show."""

    prompt: GPTView  # the prompt alone: its next-token distribution
    samples: list[Sample]
    window: GeneratedWindow | None  # prompt + sample as traced, when the maps trace it
    window_ids: tuple[int, ...] | None  # its tokens, where the text would not encode back to them
    view: GPTView  # what the maps and the walk show: the window's trace, else the prompt's
    maps: AttentionMaps

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
    cfg = ckpt.config
    prompt, samples = view_and_sample(ckpt, request.text, *request.sampling.as_tuple(), request.options)
    window, ids = traced_window(ckpt.tokenizer, request.text, samples, cfg.max_len, request.over_sample)
    view = gpt_view(ckpt, window.text, request.options, ids) if window else prompt
    titles = [
        [f"L{l} H{h}" + (" (ablated)" if f"{l}.{h}" in request.ablated else "") for h in range(cfg.n_heads)]
        for l in range(cfg.n_layers)
    ]
    maps = attention_maps(
        view.trace,
        "self",
        request.options,
        cell_titles=titles,
        boundary=window.generated_from if window else None,
    )
    return GPTPage(prompt, samples, window, ids, view, maps)
