"""The numpy step of an encoder-decoder's decoder: the modules' cached decode for one token, and
greedy_decode's use of it (the same outputs as the modules' full pass per token)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from tests.support.models import random_config
from transformer_core.config import HeadGates, InferenceOptions
from transformer_core.errors import InputError
from transformer_core.generation import NUMPY_ROWS, _greedy_modules, greedy_decode
from transformer_core.io import encode_source, load_checkpoint
from transformer_core.io.checkpoint import SHIPPED_NAMES
from transformer_core.models import Seq2Seq
from transformer_core.numpy_step import NumpyDecoderStep
from transformer_core.positional import POSITION_SCHEMES
from transformer_core.vocab import EOS_ID, PAD_ID, SOS_ID


def _perturbed(model: Seq2Seq) -> Seq2Seq:
    """Every parameter moved off its initial value (norms' gains and biases count too)."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    return model


def _source(model: Seq2Seq, lengths: tuple[int, ...]) -> torch.Tensor:
    """(B, Ts) random sources of the given lengths, each ending in EOS, PAD-padded on the right."""
    rows = [torch.randint(4, model.config.vocab_size, (n,)).tolist() + [EOS_ID] for n in lengths]
    width = max(map(len, rows))
    return torch.tensor([r + [PAD_ID] * (width - len(r)) for r in rows])


def _steps_agree(model: Seq2Seq, options: InferenceOptions, lengths: tuple[int, ...] = (6, 3)) -> None:
    """Each row's numpy steps give the logits of the modules' cached decode on the same tokens;
    the later rows restart the first row's step (as greedy_decode does)."""
    _perturbed(model)
    src = _source(model, lengths)
    with torch.inference_mode():
        memory = model.encode(src, options=options)
        step = NumpyDecoderStep(model, options, memory[0], src[0])
        for b in range(src.size(0)):
            step, cache = step if b == 0 else step.restart(memory[b], src[b]), model.new_cache()
            tokens = [SOS_ID] + torch.randint(4, model.config.vocab_size, (9,)).tolist()
            for token in tokens:
                x = torch.tensor([[token]])
                expected = model.decode(x, memory[b : b + 1], src[b : b + 1], options=options, cache=cache)
                got = step(token)
                assert got.shape == (model.config.vocab_size,) and got.dtype == np.float32
                np.testing.assert_allclose(got, expected[0, -1].numpy(), atol=2e-5, rtol=1e-5)
            assert step.length == len(tokens)


@pytest.mark.parametrize("positions", POSITION_SCHEMES)
def test_a_decoder_step_gives_the_modules_logits_for_every_scheme(make_seq2seq, positions):
    _steps_agree(make_seq2seq(positions), InferenceOptions())


@pytest.mark.parametrize("seed", range(8))
def test_a_decoder_step_gives_the_modules_logits_for_any_block(seed):
    """Random blocks: norm and its place (post-LN too), activations, tying, biases, attention-only."""
    _steps_agree(Seq2Seq(random_config("seq2seq", seed)).eval(), InferenceOptions())


@pytest.mark.parametrize(
    "options",
    [
        InferenceOptions(scale_scores=False),
        InferenceOptions(positions=False),
        InferenceOptions(padding_mask=False),  # the padded row's PAD keys are read
        InferenceOptions(sliding_window=3),
        InferenceOptions(ablate=frozenset({("cross", 1, 0), ("decoder_self", 0, 1), ("encoder_self", 0, 0)})),
    ],
    ids=["unscaled", "no-positions", "no-padding-mask", "window-3", "ablated"],
)
@pytest.mark.parametrize("positions", ["rope", "t5", "learned"])
def test_a_decoder_step_follows_the_options(make_seq2seq, positions, options):
    _steps_agree(make_seq2seq(positions), options)


def test_a_padding_mask_hides_the_pad_keys_of_the_memory(make_seq2seq):
    """With the mask on, the padded row's logits do not depend on what its PAD positions hold."""
    model = _perturbed(make_seq2seq("rope"))
    src = _source(model, (2,))
    padded = torch.cat((src, torch.full((1, 4), PAD_ID)), dim=1)
    with torch.inference_mode():
        memory = model.encode(padded)[0]
        changed = memory.clone()
        changed[src.size(1) :] += 5.0  # the PAD rows of the memory, moved
        plain = NumpyDecoderStep(model, InferenceOptions(), memory, padded[0])(SOS_ID)
        moved = NumpyDecoderStep(model, InferenceOptions(), changed, padded[0])(SOS_ID)
        unmasked = NumpyDecoderStep(model, InferenceOptions(padding_mask=False), changed, padded[0])(SOS_ID)
    np.testing.assert_array_equal(plain, moved)
    assert np.abs(unmasked - plain).max() > 1e-3


def test_the_decoder_step_fills_max_len_and_refuses_unknown_tokens(make_seq2seq):
    model = make_seq2seq("alibi", max_len=8)
    src = _source(model, (3,))
    with torch.inference_mode():
        step = NumpyDecoderStep(model, InferenceOptions(), model.encode(src)[0], src[0])
    for bad in (-1, model.config.vocab_size):
        with pytest.raises(InputError, match=r"target: token ids must lie in \[0, 16\)"):
            step(bad)
    for token in [SOS_ID] + [5] * 7:
        step(token)
    with pytest.raises(ValueError, match="full at 8"):
        step(5)


def test_which_models_and_options_the_decoder_step_serves(make_seq2seq, make_gpt):
    model = make_seq2seq()
    assert NumpyDecoderStep.supports(model, InferenceOptions())
    assert NumpyDecoderStep.supports(model, InferenceOptions(padding_mask=False, positions=False))
    assert not NumpyDecoderStep.supports(model, InferenceOptions(causal=False))  # later targets seen
    gates = HeadGates({"cross": torch.ones(model.config.n_layers, model.config.n_heads)})
    assert not NumpyDecoderStep.supports(model, InferenceOptions(head_gates=gates))
    assert not NumpyDecoderStep.supports(make_seq2seq().double(), InferenceOptions())
    assert not NumpyDecoderStep.supports(make_seq2seq().train(), InferenceOptions())
    assert not NumpyDecoderStep.supports(make_gpt(), InferenceOptions())


def test_greedy_decode_decodes_each_row_with_numpy_steps_as_the_modules_would(make_seq2seq):
    """One encoder pass, no decoder pass; a padded batch's outputs are the modules' outputs; more
    than NUMPY_ROWS rows go through the modules."""
    model = _perturbed(make_seq2seq("rope"))
    calls: list[int] = []
    model.decoder[0].register_forward_pre_hook(lambda module, args: calls.append(1))
    src = _source(model, (7, 2, 5))
    got = greedy_decode(model, src, 9)
    assert not calls
    with torch.inference_mode():
        assert got == _greedy_modules(model, src, model.encode(src), 9, InferenceOptions())
    many = _source(model, (3,) * (NUMPY_ROWS + 1))  # an evaluation's batch: the modules' batched passes
    for rows, options in ((src, InferenceOptions(causal=False)), (many, InferenceOptions())):
        with torch.inference_mode():
            expected = _greedy_modules(model, rows, model.encode(rows, options=options), 9, options)
        calls.clear()
        assert greedy_decode(model, rows, 9, options=options) == expected
        assert len(calls) > 1  # the modules, a pass per token


SHIPPED_TRANSFORMERS = [
    n for n in SHIPPED_NAMES if n.startswith("reverse-") and n not in ("reverse-gru", "reverse-bahdanau")
]


@pytest.mark.parametrize("name", SHIPPED_TRANSFORMERS)
def test_the_shipped_reversal_models_write_what_the_modules_write(name):
    """/reversal's greedy outputs, and its padded batch's, are the modules' for 120 random words of
    1 to 10 letters, with the page's switches."""
    ckpt, rng = load_checkpoint(name), random.Random(name)
    model = ckpt.model
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 10))) for _ in range(120)]
    switches = (InferenceOptions(), InferenceOptions(positions=False), InferenceOptions(padding_mask=False))
    for options in switches:
        for i in range(0, len(words), 2):
            src = encode_source(ckpt.tokenizer, words[i : i + 2])
            with torch.inference_mode():
                modules = _greedy_modules(model, src, model.encode(src, options=options), 12, options)
            assert greedy_decode(model, src, 12, options=options) == modules, (words[i : i + 2], options)
