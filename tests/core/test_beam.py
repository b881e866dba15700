"""Beam search: exhaustive search on a tiny vocabulary, width 1 = greedy, every hypothesis
re-scored by a plain forward pass, bad widths refused; seq2seq sampling; perplexity."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from transformer_core.beam import (
    BeamResult,
    Hypothesis,
    beam_search,
    check_beam_width,
    length_penalty,
)
from transformer_core.config import ModelConfig
from transformer_core.errors import ConfigError, InputError
from transformer_core.generation import generate, greedy_decode, sample_seq2seq
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.data import encode_source
from transformer_core.losses import perplexity
from transformer_core.models import GPT, Model, build_model
from transformer_core.stepping import SpecialTokens
from transformer_core.vocab import EOS_ID, PAD_ID, SOS_ID, UNK_ID

ENCODER_DECODERS = ("transformer", "gru", "bahdanau")


def encoder_decoder(
    kind: str, seed: int = 0, vocab_size: int = 16, positions: str = "rope", spread: float = 3.0
) -> Model:
    """A tiny untrained encoder-decoder of one kind, weights times `spread` so that its choices
    are far from ties (float32 logits then err more: the re-scoring test uses spread 1)."""
    torch.manual_seed(seed)
    shape = dict(n_layers=2, n_heads=2, positions=positions) if kind == "transformer" else {}
    if kind != "transformer":
        shape = dict(n_layers=1, n_heads=1, positions="none")
    config = ModelConfig(
        arch="seq2seq", model=kind, vocab_size=vocab_size, d_model=16, d_ff=32, max_len=16, **shape
    )
    model = build_model(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(spread)
    return model


def tiny_gpt(seed: int = 0, vocab_size: int = 16, positions: str = "rope", spread: float = 3.0) -> GPT:
    torch.manual_seed(seed)
    config = ModelConfig(
        vocab_size=vocab_size, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_len=16, positions=positions
    )
    model = GPT(config).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(spread)
    return model


@torch.no_grad()
def rescored(model: Model, source: list[int], tokens: tuple[int, ...]) -> float:
    """Sum of log P(token | everything before) by one plain forward pass (no cache, no stepping)."""
    if isinstance(model, GPT):
        ids = torch.tensor([[*source, *tokens]])
        log_probs = torch.log_softmax(model(ids)[0].double(), -1)[len(source) - 1 : -1]  # (n, V)
    else:
        src, tgt_in = torch.tensor([source]), torch.tensor([[SOS_ID, *tokens[:-1]]])
        log_probs = torch.log_softmax(model(src, tgt_in)[0].double(), -1)  # (n, V)
    return float(log_probs.double().gather(1, torch.tensor(tokens)[:, None]).sum())


def every_hypothesis(result: BeamResult) -> list[Hypothesis]:
    return [h for s in result.steps for h in (*s.kept, *s.finished, *s.pruned)] + list(result.final)


# ------------------------------------------------------------------ exhaustive search


def best_by_enumeration(
    model: Model, source: list[int], letters: list[int], depth: int, eos: int | None, alpha: float
) -> tuple[tuple[int, ...], float]:
    """The optimum over every output: each string of letters ended by EOS (length <= depth),
    and each string of `depth` letters (where the search stops)."""
    outputs = [seq for n in range(depth + 1) for seq in itertools.product(letters, repeat=n)]
    candidates = [(*seq, eos) for seq in outputs if eos is not None and len(seq) < depth]
    candidates += [seq for seq in outputs if len(seq) == depth]
    scored = [(rescored(model, source, c) / length_penalty(len(c), alpha), c) for c in candidates]
    score, best = max(scored)
    return best, score


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ENCODER_DECODERS)
@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_width_vocab_to_the_depth_finds_the_seq2seq_optimum(kind: str, seed: int, alpha: float) -> None:
    """Letters {a, b} plus EOS, depth 3: a width of 2^3 = 8 keeps every live hypothesis."""
    model = encoder_decoder(kind, seed, vocab_size=6)
    source = [4, 5, 5, 4, EOS_ID]
    special = SpecialTokens(EOS_ID, (PAD_ID, SOS_ID, UNK_ID))
    result = beam_search(model, source, 8, 3, alpha=alpha, special=special)
    best, score = best_by_enumeration(model, source, [4, 5], 3, EOS_ID, alpha)
    assert result.best.tokens == best
    assert result.best.score == pytest.approx(score, abs=1e-5)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("positions", ["rope", "t5", "learned"])
def test_width_vocab_to_the_depth_finds_the_gpt_optimum(seed: int, positions: str) -> None:
    model = tiny_gpt(seed, vocab_size=6, positions=positions)  # specials banned: 2 letters
    result = beam_search(model, [4, 5, 4], 8, 3)
    best, score = best_by_enumeration(model, [4, 5, 4], [4, 5], 3, None, 0.6)
    assert result.best.tokens == best and result.best.score == pytest.approx(score, abs=1e-5)
    assert len(result.final) == 8 and not any(h.finished for h in result.final)


# ------------------------------------------------------------------ width 1 = greedy


@pytest.mark.parametrize("positions", ["sinusoidal", "rope", "alibi", "t5", "none"])
def test_width_one_is_greedy_for_gpt(positions: str) -> None:
    model = tiny_gpt(3, positions=positions)
    prompt = [5, 9, 7, 4]
    result = beam_search(model, prompt, 1, 10)
    greedy = [s.token for s in generate(model, prompt, 10, temperature=0)]
    assert result.tokens == greedy and len(result.steps) == 10


@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("kind", ENCODER_DECODERS)
def test_width_one_is_greedy_for_every_encoder_decoder(kind: str, alpha: float) -> None:
    for seed in range(4):
        model = encoder_decoder(kind, seed)
        source = [5, 9, 7, 4, 11, EOS_ID]
        result = beam_search(model, source, 1, 12, alpha=alpha)
        assert result.tokens == greedy_decode(model, torch.tensor([source]), 12)[0]
        stepped = [s.token for s in sample_seq2seq(model, source, 12, temperature=0)]
        assert [t for t in stepped if t != EOS_ID] == result.tokens


def test_shipped_reversal_model_beam_reverses_and_width_one_is_greedy() -> None:
    ckpt = load_checkpoint("reverse-sinusoidal")
    source = encode_source(ckpt.tokenizer, ["attention"])
    greedy = greedy_decode(ckpt.model, source, 12)[0]
    for width in (1, 4, 8):
        result = beam_search(ckpt.model, source[0].tolist(), width, 12)
        assert ckpt.tokenizer.decode(result.tokens) == "noitnetta"
        assert result.best.finished and result.best.tokens[-1] == EOS_ID
        if width == 1:
            assert result.tokens == greedy


# ------------------------------------------------------------------ every hypothesis re-scored


@pytest.mark.parametrize("kind", ["gpt", *ENCODER_DECODERS])
@pytest.mark.parametrize("width", [2, 4, 8])
def test_every_hypothesis_is_rescored_by_a_plain_forward_pass(kind: str, width: int) -> None:
    model = tiny_gpt(1, positions="t5", spread=1.0) if kind == "gpt" else encoder_decoder(kind, 1, spread=1.0)
    source = [5, 9, 7, 4] if kind == "gpt" else [5, 9, 7, 4, EOS_ID]
    result = beam_search(model, source, width, 7, alpha=0.6)
    hyps = every_hypothesis(result)
    assert len(hyps) > width
    for h in hyps:
        assert h.log_prob == pytest.approx(rescored(model, source, h.tokens), abs=1e-5)
        assert h.score == pytest.approx(h.log_prob / length_penalty(len(h.tokens), 0.6), abs=1e-9)


@pytest.mark.parametrize("name", ["gpt-sinusoidal", "reverse-t5", "reverse-bahdanau"])
def test_shipped_models_hypotheses_are_rescored_too(name: str) -> None:
    """In float64, so that what is checked is the search, not float32's batch-size rounding."""
    ckpt = load_checkpoint(name)
    ckpt.model.double()
    if isinstance(ckpt.model, GPT):
        source = ckpt.tokenizer.encode("The return statement")
    else:
        source = encode_source(ckpt.tokenizer, ["transformer"])[0].tolist()
    result = beam_search(ckpt.model, source, 4, 20)
    for h in every_hypothesis(result):
        assert h.log_prob == pytest.approx(rescored(ckpt.model, source, h.tokens), abs=1e-5)


@pytest.mark.parametrize("kind", ["gpt", *ENCODER_DECODERS])
def test_the_tree_is_consistent(kind: str) -> None:
    model = tiny_gpt(2) if kind == "gpt" else encoder_decoder(kind, 2)
    source = [6, 8, 10] if kind == "gpt" else [6, 8, 10, EOS_ID]
    width = 4
    result = beam_search(model, source, width, 8)
    previous: tuple[Hypothesis, ...] = (Hypothesis((), 0.0, 0.0),)
    for t, step in enumerate(result.steps):
        assert step.step == t and 0 < len(step.kept) + len(step.finished) <= 2 * width
        assert len(step.kept) <= width and len(step.kept) + len(step.finished) + len(step.pruned) <= 2 * width
        ranked = [h.log_prob for h in step.kept]
        assert ranked == sorted(ranked, reverse=True)
        for h in (*step.kept, *step.finished, *step.pruned):
            assert h.tokens[:-1] == previous[h.parent].tokens and len(h.tokens) == t + 1
            assert h.finished == (h.tokens[-1] == result.eos_id)
            assert not set(h.tokens) & {PAD_ID, SOS_ID} and (kind != "gpt" or min(h.tokens) >= 4)
        previous = step.kept
    assert [h.score for h in result.final] == sorted((h.score for h in result.final), reverse=True)
    assert result.best is result.final[0] and result.tokens == [t for t in result.best.tokens if t != EOS_ID]


def test_search_ends_when_width_hypotheses_finished() -> None:
    ckpt = load_checkpoint("reverse-rope")
    source = encode_source(ckpt.tokenizer, ["abc"])[0].tolist()
    result = beam_search(ckpt.model, source, 2, 30)
    finished = [h for s in result.steps for h in s.finished]
    assert len(result.steps) < 30 and len(finished) >= 2 or not result.steps[-1].kept
    assert all(h.finished for h in result.final)


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize("width", [0, 9, "abc", -1, 2.5, True, None, "", "9"])
def test_bad_widths_are_refused_with_a_clear_message(width: object) -> None:
    with pytest.raises(ConfigError, match=r"beam width: .* is not a whole number from 1 to 8"):
        check_beam_width(width)
    with pytest.raises(ConfigError, match="beam width"):
        beam_search(tiny_gpt(), [5, 6], width, 3)  # type: ignore[arg-type]


def test_good_widths_and_penalties() -> None:
    assert [check_beam_width(w) for w in (1, 8, "4", " 3 ")] == [1, 8, 4, 3]
    assert length_penalty(1, 0.6) == 1.0 and length_penalty(7, 0.5) == pytest.approx(math.sqrt(2))
    assert length_penalty(40, 0.0) == 1.0
    with pytest.raises(ConfigError, match="alpha"):
        beam_search(tiny_gpt(), [5, 6], 2, 3, alpha=-0.5)
    with pytest.raises(ConfigError, match="max_new_tokens"):
        beam_search(tiny_gpt(), [5, 6], 2, 0)
    with pytest.raises(InputError, match="no room for the prompt"):
        beam_search(tiny_gpt(), [5, 6], 2, 16)  # max_len 16


def test_a_long_gpt_prompt_keeps_its_last_tokens() -> None:
    model = tiny_gpt(4)
    prompt = list(torch.randint(4, 16, (14,)).tolist())
    long = beam_search(model, prompt, 3, 6)
    short = beam_search(model, prompt[-10:], 3, 6)  # 10 + 6 = the block of 16
    assert long.final == short.final


# ------------------------------------------------------------------ seq2seq sampling, perplexity


@pytest.mark.parametrize("kind", ENCODER_DECODERS)
def test_seq2seq_sampling_is_seeded_and_ends_with_eos(kind: str) -> None:
    model = encoder_decoder(kind, 5)
    source = [5, 6, 7, 8, EOS_ID]
    first = sample_seq2seq(model, source, 15, temperature=1.5, seed=3)
    again = sample_seq2seq(model, source, 15, temperature=1.5, seed=3)
    assert [s.token for s in first] == [s.token for s in again]
    assert all(0 < s.prob <= 1 and s.token not in (PAD_ID, SOS_ID) for s in first)
    assert EOS_ID not in [s.token for s in first[:-1]] and (first[-1].token == EOS_ID or len(first) == 15)
    others = {
        tuple(s.token for s in sample_seq2seq(model, source, 15, temperature=1.5, seed=k)) for k in range(6)
    }
    assert len(others) > 1


def test_reversal_sampling_at_low_temperature_reverses() -> None:
    ckpt = load_checkpoint("reverse-alibi")
    source = encode_source(ckpt.tokenizer, ["hello"])[0].tolist()
    steps = sample_seq2seq(ckpt.model, source, 10, temperature=0.3, seed=0)
    assert ckpt.tokenizer.decode([s.token for s in steps]) == "olleh" and steps[-1].token == EOS_ID


def test_perplexity_is_the_exponential_of_nats() -> None:
    assert perplexity(0.0) == 1.0 and perplexity(math.log(3.3)) == pytest.approx(3.3)
    assert perplexity(1e4) == math.inf
    with pytest.raises(ValueError, match="nats"):
        perplexity(-0.1)
    ckpt = load_checkpoint("gpt-sinusoidal")
    assert ckpt.metrics["perplexity"] == pytest.approx(perplexity(ckpt.metrics["val_loss"]))
