"""How the explorers write their output: the decoding choice (/gpt: sample, greedy, beam search;
/reversal: greedy, beam search, sample) with its controls, and the beam search's steps once it
ran."""

from __future__ import annotations

from typing import Any

import streamlit as st

from attention_lab.explorers.beam_tree import beam_tree_html
from attention_lab.frame.state import clamp_state
from attention_lab.viewmodel.gpt import BeamSettings, SamplingSettings
from attention_lab.viewmodel.reversal import DECODINGS as REVERSAL_DECODINGS
from attention_lab.viewmodel.reversal import ReversalDecoding
from transformer_core.beam import MAX_BEAM_WIDTH, BeamResult
from transformer_core.io import Tokenizer

#: the sample's default length by what a position is. A BPE model may be GPT-2 small, where each
#: step reads all 475 MiB of weights: ~35 ms a token on 2 CPU cores, so 8 tokens (a clause, ~30
#: characters) keep a new prompt's page run under 1 s (benchmarks/bench_import.py); 80 take ~3 s
DEFAULT_NEW = {"character": 80, "token": 8}


#: how the continuation is written: the page's "Decoding" choice (URL parameter `decoding`)
DECODINGS = {"sample": "Sample", "greedy": "Greedy", "beam": "Beam search"}


def decoding_settings(
    prefix: str, vocab_size: int, unit: str = "character"
) -> tuple[SamplingSettings, BeamSettings | None]:
    """The decoding choice, then its controls in a row: how many characters (tokens) and, to
    sample, temperature, top-k, top-p and the seed; for beam search its width and length
    penalty. Greedy is sampling at temperature 0. The length follows the model's kind when the
    model changes kind and the length is still the previous kind's default."""
    mode = st.radio(
        "Decoding",
        list(DECODINGS),
        format_func=DECODINGS.__getitem__,
        horizontal=True,
        key=prefix + "decoding",
        persist_state="session",
        help="Sample: draw each next character at random from the model's distribution. Greedy: always "
        "take the likeliest. Beam search: keep the W likeliest continuations at every step, and pick the "
        "best whole output at the end.",
    )
    key, was = prefix + "max_new", st.session_state.get(prefix + "max_new_unit", "character")
    if was != unit and st.session_state.get(key) == DEFAULT_NEW[was]:  # another kind of model, untouched
        st.session_state[key] = DEFAULT_NEW[unit]
    st.session_state[prefix + "max_new_unit"] = unit
    g1, g2, g3, g4, g5 = st.columns(5)
    max_new = g1.slider(f"New {unit}s", 1, 200, key=key, persist_state="session")
    seed = int(st.session_state.get(prefix + "seed", 0))  # kept for when sampling comes back
    if mode == "greedy":
        return SamplingSettings(int(max_new), 0.0, 0, 1.0, seed), None
    if mode == "beam":
        width = g2.slider(
            "Beam width",
            1,
            MAX_BEAM_WIDTH,
            key=prefix + "beam",
            persist_state="session",
            help="How many partial outputs are kept at every step. Width 1 is greedy decoding.",
        )
        alpha = g3.slider(
            "Length penalty α",
            0.0,
            2.0,
            step=0.1,
            key=prefix + "alpha",
            persist_state="session",
            help="An output's score is log P / ((5 + length) / 6)^α: 0 ranks by probability alone, "
            "which favours short outputs; larger α evens that out.",
        )
        return SamplingSettings(int(max_new), 0.0, 0, 1.0, seed), BeamSettings(int(width), float(alpha))
    return sampling_controls(prefix, vocab_size, int(max_new), (g2, g3, g4, g5)), None


def sampling_controls(
    prefix: str, vocab_size: int, max_new: int, columns: tuple[Any, ...]
) -> SamplingSettings:
    """Temperature, top-k, top-p and the seed, in four columns."""
    g2, g3, g4, g5 = columns
    temperature = g2.slider(
        "Temperature",
        0.0,
        2.0,
        step=0.05,
        key=prefix + "temperature",
        persist_state="session",
        help="Divides the logits: low = safe and repetitive, high = adventurous. 0 = greedy.",
    )
    clamp_state(prefix + "top_k", list(range(vocab_size + 1)), 0)
    top_k = g3.number_input(
        "Top-k (0 = off)",
        0,
        vocab_size,
        key=prefix + "top_k",
        persist_state="session",
        help="Sample only among the k most likely characters.",
    )
    top_p = g4.slider(
        "Top-p (1 = off)",
        0.05,
        1.0,
        step=0.05,
        key=prefix + "top_p",
        persist_state="session",
        help="Sample only among the most likely characters that together reach this probability.",
    )
    seed = g5.number_input(
        "Seed", 0, 2**31 - 1, key=prefix + "seed", persist_state="session", help="Same seed, same sample."
    )
    return SamplingSettings(max_new, float(temperature), int(top_k), float(top_p), int(seed))


def beam_search_panel(result: BeamResult, tokenizer: Tokenizer, asked: int, unit: str = "character") -> None:
    """The beam search, step by step (explorers.beam_tree), and how the winner was chosen."""
    best = result.best
    st.markdown(f"**Beam search, width {result.width}: every step**")
    st.html(beam_tree_html(result, tokenizer))
    wrote = len(result.tokens)
    room = f" (the model's block left room for {wrote})" if wrote < asked and not best.finished else ""
    st.caption(
        f"Each row is one step: the {result.width} kept outputs (best first), then those that ended (⏹), "
        f"then the pruned ones, dashed; the small number is the total log-probability so far. The winner's "
        f"path is outlined: {wrote} {unit}s{room}, log P {best.log_prob:.2f}, score {best.score:.2f} "
        f"(log P / ((5 + length) / 6)^{result.alpha:g}), the best of {len(result.final)} final outputs."
    )


def chosen_reversal_decoding(prefix: str) -> ReversalDecoding:
    """/reversal's decoding as its controls (reversal_decoding_controls, drawn further down the
    page) hold it: what the page computes before it draws them."""
    state = st.session_state
    return ReversalDecoding(
        str(state.get(prefix + "decoding", "greedy")),
        int(state.get(prefix + "beam", 4)),
        float(state.get(prefix + "temperature", 1.0)),
        int(state.get(prefix + "seed", 0)),
    )


def reversal_decoding_controls(prefix: str, where: Any, chosen: ReversalDecoding) -> None:
    """/reversal's decoding choice behind one button in `where` (a popover, under the first maps:
    they stay on the first screen): greedy, beam search (its width) or a sample (its temperature
    and seed). The button says what is chosen."""
    said = {
        "greedy": "greedy",
        "beam": f"beam search, width {chosen.width}",
        "sample": f"sample at {chosen.temperature:g}",
    }
    box = where.popover(f"Decoding: {said.get(chosen.mode, 'greedy')}", icon=":material/tune:")
    mode = box.radio(
        "Decoding",
        list(REVERSAL_DECODINGS),
        format_func=REVERSAL_DECODINGS.__getitem__,
        key=prefix + "decoding",
        persist_state="session",
        help="Greedy: the likeliest letter at every step. Beam search: keep the W likeliest partial "
        "outputs at every step. Sample: draw each letter at random (a wrong letter stays visible).",
    )
    if mode == "beam":
        box.slider("Beam width", 1, MAX_BEAM_WIDTH, key=prefix + "beam", persist_state="session")
    elif mode == "sample":
        box.slider(
            "Temperature",
            0.1,
            2.0,
            step=0.1,
            key=prefix + "temperature",
            persist_state="session",
            help="Divides the logits: low = nearly greedy, high = more mistakes.",
        )
        box.number_input("Seed", 0, 2**31 - 1, key=prefix + "seed", persist_state="session")
