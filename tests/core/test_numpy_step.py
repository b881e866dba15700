"""The numpy decoding step: the modules' cached forward for one token, and generate's use of it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from attention_lab.models.explorer_compute import view_and_sample
from tests.support.models import random_config
from transformer_core.config import HeadGates, InferenceOptions
from transformer_core.device import set_cpu_threads
from transformer_core.errors import InputError
from transformer_core.generation import generate
from transformer_core.io import load_checkpoint
from transformer_core.io.checkpoint import SHIPPED_NAMES
from transformer_core.models import BERT, GPT
from transformer_core.numpy_step import NumpyStep
from transformer_core.positional import POSITION_SCHEMES


def _perturbed(model: GPT) -> GPT:
    """Every parameter moved off its initial value, so that norms' gains and biases (ones and
    zeros when built) count in the comparison."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    return model


def _steps_agree(model: GPT, options: InferenceOptions, prompt: int = 5, length: int = 15) -> None:
    """After a torch pass of `prompt` tokens, each numpy step gives the logits of the modules'
    cached step on the same token (the numpy step keeps its own copy of the cache)."""
    _perturbed(model)
    idx = torch.randint(4, model.config.vocab_size, (1, length))
    with torch.inference_mode():
        cache = model.new_cache()
        model(idx[:, :prompt], options=options, cache=cache)
        step = NumpyStep(model, options, cache)
        for t in range(prompt, length):
            expected = model(idx[:, t : t + 1], options=options, cache=cache)[0, -1]
            got = step(int(idx[0, t]))
            assert got.shape == (model.config.vocab_size,) and got.dtype == np.float32
            np.testing.assert_allclose(got, expected.numpy(), atol=2e-5, rtol=1e-5)
    assert step.length == length


@pytest.mark.parametrize("positions", POSITION_SCHEMES)
def test_a_numpy_step_gives_the_modules_logits_for_every_scheme(make_gpt, positions):
    _steps_agree(make_gpt(positions), InferenceOptions())


@pytest.mark.parametrize("seed", range(12))
def test_a_numpy_step_gives_the_modules_logits_for_any_block(seed):
    """Random blocks: norm and its place, activations (SwiGLU, tanh GELU), tying, biases,
    attention-only, unscaled embeddings."""
    _steps_agree(GPT(random_config("gpt", seed)).eval(), InferenceOptions())


@pytest.mark.parametrize(
    "options",
    [
        InferenceOptions(scale_scores=False),
        InferenceOptions(positions=False),
        InferenceOptions(sliding_window=3),
        InferenceOptions(ablate=frozenset({("self", 1, 0), ("self", 0, 1)})),
    ],
    ids=["unscaled", "no-positions", "window-3", "ablated"],
)
@pytest.mark.parametrize("positions", ["rope", "alibi", "learned"])
def test_a_numpy_step_follows_the_options(make_gpt, positions, options):
    _steps_agree(make_gpt(positions), options)


@pytest.mark.parametrize("positions", ["alibi", "t5"])
def test_a_position_bias_is_computed_in_blocks_of_queries_across_a_long_block(make_gpt, positions):
    """Past BIAS_ROWS queries the next block of bias rows is the scheme's own: 3 blocks of 32."""
    model = make_gpt(positions, max_len=100)
    _steps_agree(model, InferenceOptions(), prompt=5, length=100)
    _steps_agree(model, InferenceOptions(sliding_window=7), prompt=5, length=80)


def test_the_step_fills_the_cache_to_max_len_and_no_further(make_gpt):
    model = make_gpt("t5", max_len=16)
    _steps_agree(model, InferenceOptions(), prompt=3, length=16)
    with torch.inference_mode():
        cache = model.new_cache()
        model(torch.randint(4, 16, (1, 15)), cache=cache)
        step = NumpyStep(model, InferenceOptions(), cache)
        step(5)
        with pytest.raises(ValueError, match="full at 16"):
            step(5)
        with pytest.raises(ValueError, match="1 to max_len - 1"):
            NumpyStep(model, InferenceOptions(), model.new_cache())


def test_a_token_outside_the_vocabulary_is_refused(make_gpt):
    model = make_gpt()
    with torch.inference_mode():
        cache = model.new_cache()
        model(torch.tensor([[4, 5]]), cache=cache)
    step = NumpyStep(model, InferenceOptions(), cache)
    for bad in (-1, 16, 10_000):
        with pytest.raises(InputError, match=r"\[0, 16\)"):
            step(bad)
    assert step.length == 2


def test_the_step_reads_the_weights_and_never_writes_them(make_gpt):
    """Views, not copies: an edit of the model shows at once, and the views are read-only."""
    model = make_gpt()
    with torch.inference_mode():
        cache = model.new_cache()
        model(torch.tensor([[4, 5, 6]]), cache=cache)
    step = NumpyStep(model, InferenceOptions(), cache)
    assert np.shares_memory(step.unembedding, model.lm_head.weight.detach().numpy())
    with pytest.raises(ValueError, match="read-only"):
        step.blocks[0].w_qkv[0, 0] = 1.0


def test_which_models_and_options_it_serves(make_gpt, tiny_config):
    model = make_gpt()
    assert NumpyStep.supports(model, InferenceOptions())
    assert not NumpyStep.supports(model, InferenceOptions(head_gates=_ones(model)))
    assert not NumpyStep.supports(model.double(), InferenceOptions())
    assert not NumpyStep.supports(make_gpt().train(), InferenceOptions())
    assert not NumpyStep.supports(BERT(tiny_config("bert")), InferenceOptions())


def _ones(model: GPT) -> HeadGates:
    return HeadGates({"self": torch.ones(model.config.n_layers, model.config.n_heads)})


def _forward_calls(model: GPT) -> list[int]:
    calls: list[int] = []
    model.register_forward_pre_hook(lambda module, args: calls.append(1))
    return calls


def test_generate_takes_numpy_steps_after_the_prompt_and_torch_where_it_must(make_gpt):
    """One torch pass for the prompt, then numpy steps; past max_len the window is a torch pass
    per token; options numpy does not serve stay with torch. The tokens agree every way."""
    model = make_gpt("rope", max_len=16)
    calls = _forward_calls(model)
    kwargs = dict(temperature=0.9, top_k=6, seed=3)
    numpy_run = generate(model, [4, 5, 6, 7], 10, **kwargs)
    assert len(calls) == 1
    calls.clear()
    past_window = generate(model, [4, 5, 6, 7], 20, **kwargs)  # contexts of 17 to 23 tokens: 7 windows
    assert len(calls) == 1 + 7
    calls.clear()
    torch_run = generate(model, [4, 5, 6, 7], 10, use_cache=False, **kwargs)
    assert len(calls) == 10
    assert [s.token for s in numpy_run] == [s.token for s in torch_run] == [s.token for s in past_window][:10]
    np.testing.assert_allclose([s.prob for s in numpy_run], [s.prob for s in torch_run], atol=1e-5)
    calls.clear()
    generate(model, [4, 5, 6, 7], 5, options=InferenceOptions(head_gates=_ones(model)))
    assert len(calls) == 5


@pytest.mark.parametrize(
    ("prompt", "cached", "new"),
    [([7], 0, 6), ([4, 5, 6, 7, 8, 9], 2, 6), (list(range(4, 16)) + [4, 5, 6], 0, 4)],
    ids=["one-token-prompt", "a-cache-of-part-of-the-prompt", "from-max_len-1"],
)
def test_generate_hands_over_to_numpy_wherever_the_prompt_ends(make_gpt, prompt, cached, new):
    """A one-token prompt; a given cache holding only part of the prompt (torch feeds the rest,
    then numpy); a prompt of max_len - 1 (one numpy step, then the window slides): the same
    tokens and probabilities as a full torch pass per token."""
    model = _perturbed(make_gpt("alibi", max_len=16))
    kwargs = dict(temperature=1.0, seed=5)
    cache = None
    if cached:
        cache = model.new_cache()
        with torch.inference_mode():
            model(torch.tensor([prompt[:cached]]), cache=cache)
    got = generate(model, prompt, new, cache=cache, **kwargs)
    full = generate(model, prompt, new, use_cache=False, **kwargs)
    assert [s.token for s in got] == [s.token for s in full]
    np.testing.assert_allclose([s.prob for s in got], [s.prob for s in full], atol=1e-5)


SHIPPED_GPTS = [n for n in SHIPPED_NAMES if n.startswith("gpt-")]


@pytest.mark.parametrize("name", SHIPPED_GPTS)
def test_the_shipped_gpts_write_what_full_passes_write(name):
    """/gpt's computation (a traced prompt, then numpy steps) samples, seed for seed, what a
    full torch pass per token samples, with the same probabilities and alternatives."""
    ckpt = load_checkpoint(name)
    options = InferenceOptions()
    for seed, text in enumerate(["The with statement is used to", "Ada", "def f(x):\n    return"]):
        _, samples = view_and_sample(ckpt, text, 40, 0.8, 0, 1.0, seed, options)
        full = generate(
            ckpt.model,
            ckpt.tokenizer.encode(text),
            40,
            temperature=0.8,
            seed=seed,
            use_cache=False,
            options=options,
            never_sampled=ckpt.tokenizer.never_sampled,
            stop_id=ckpt.tokenizer.stop_id,
        )
        assert [s.token for s in samples] == [s.token for s in full]
        np.testing.assert_allclose([s.prob for s in samples], [s.prob for s in full], atol=1e-5)
        labels = ckpt.tokenizer.token_labels
        assert [[lab for lab, _ in s.top] for s in samples] == [
            [labels([i])[0] for i, _ in s.top] for s in full
        ]


def _blas_threads() -> set[int]:
    return {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}


def test_cpu_threads_bound_torch_and_numpys_blas_alike():
    """The numpy step's matrix products run on numpy's BLAS: the app's thread setting must
    bound it as it bounds torch, or one large product takes every core of a shared box. It
    bounds BLAS even where torch already has that many threads."""
    torch_before, (blas_before,) = torch.get_num_threads(), _blas_threads()
    try:
        for threads in (2, 1):
            set_cpu_threads(threads)
            assert torch.get_num_threads() == threads and _blas_threads() == {threads}
        threadpool_limits(2, user_api="blas")  # torch at 1 already, BLAS not
        set_cpu_threads(1)
        assert _blas_threads() == {1}
    finally:
        torch.set_num_threads(torch_before)
        threadpool_limits(blas_before, user_api="blas")
