"""Generation (KV cache, sampling filters, greedy decoding) and the trace entry points."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer_core.capture import AttentionCapture
from transformer_core.config import InferenceOptions
from transformer_core.errors import InputError
from transformer_core.generation import filter_logits, generate, greedy_decode
from transformer_core.interp.trace import trace_gpt, trace_gpt_ids, trace_seq2seq
from transformer_core.io.data import encode_source, reversal_tokenizer
from transformer_core.io.tokenizer import EOS_ID, PAD_ID, SOS_ID, UNK_ID, CharTokenizer
from transformer_core.positional import POSITION_SCHEMES

# ------------------------------------------------------------------ KV cache


@pytest.mark.parametrize("positions", POSITION_SCHEMES)
def test_cached_forward_equals_full_forward(make_gpt, positions):
    model = make_gpt(positions, max_len=16)
    idx = torch.randint(4, 16, (2, 10))
    with torch.no_grad():
        full = model(idx)
        cache = model.new_cache()
        pieces = [model(idx[:, :4], cache=cache)]  # a prompt of 4, then one token at a time
        assert cache.length == 4
        for t in range(4, 10):
            pieces.append(model(idx[:, t : t + 1], cache=cache))
        assert cache.length == 10
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("positions", ["sinusoidal", "rope", "alibi", "none"])
def test_cached_forward_with_sliding_window_option(make_gpt, positions):
    model = make_gpt(positions)
    options = InferenceOptions(sliding_window=3)
    idx = torch.randint(4, 16, (1, 8))
    with torch.no_grad():
        full = model(idx, options=options)
        cache = model.new_cache()
        steps = [model(idx[:, t : t + 1], options=options, cache=cache) for t in range(8)]
        unwindowed = model(idx)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    assert (unwindowed[:, 3:] - full[:, 3:]).abs().max() > 1e-4


def _tokens(samples) -> list[int]:
    return [s.token for s in samples]


def test_cache_grows_past_its_buffer_and_keep_rewinds_it(make_gpt):
    """The cache writes in place into buffers it doubles; keep(n) forgets from n on, and the
    positions fed after it overwrite the forgotten ones: the same logits as a full pass."""
    model = make_gpt("rope", max_len=40)
    idx = torch.randint(4, 16, (1, 30))
    with torch.no_grad():
        full = model(idx)
        cache = model.new_cache()
        model(idx[:, :3], cache=cache)  # buffers for 6 positions, then grown step by step
        steps = [model(idx[:, t : t + 1], cache=cache) for t in range(3, 30)]
        torch.testing.assert_close(torch.cat(steps, dim=1), full[:, 3:], atol=1e-5, rtol=1e-5)
        assert cache.length == 30 and cache.layers[0].k.shape[2] == 30
        cache.keep(12)
        assert cache.length == 12 and cache.layers[-1].v.shape[2] == 12
        other = torch.randint(4, 16, (1, 5))
        again = model(other, cache=cache)
        expected = model(torch.cat((idx[:, :12], other), dim=1))[:, 12:]
    torch.testing.assert_close(again, expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="between 0 and the 17 cached"):
        cache.keep(18)


@pytest.mark.parametrize("positions", POSITION_SCHEMES)
def test_sampling_from_a_traced_prompts_cache_equals_sampling_afresh(make_gpt, positions):
    """A traced pass that keeps its keys and values, rewound by one token, lets sampling go on
    from it: the same tokens and probabilities as sampling from the bare prompt."""
    model = make_gpt(positions, max_len=24)
    tok = CharTokenizer("abcdefghijkl")  # 16 ids with the four specials
    prompt = "abcdefglhaik"
    ids = tok.encode(prompt)
    kwargs = dict(max_new_tokens=10, temperature=0.9, top_k=5, seed=11)
    afresh = generate(model, ids, **kwargs)
    cache = model.new_cache()
    traced = trace_gpt_ids(model, tok, ids, prompt, [], cache=cache)
    assert cache.length == len(ids)
    np.testing.assert_allclose(
        traced.attention["self"], trace_gpt(model, tok, prompt).attention["self"], atol=1e-6
    )
    cache.keep(len(ids) - 1)
    resumed = generate(model, ids, cache=cache, **kwargs)
    assert _tokens(resumed) == _tokens(afresh)
    np.testing.assert_allclose([s.prob for s in resumed], [s.prob for s in afresh], atol=1e-5)
    with pytest.raises(ValueError, match="some, not all"):
        generate(model, ids, cache=model.new_cache(), **kwargs)


@pytest.mark.parametrize("positions", POSITION_SCHEMES)
def test_generation_with_and_without_cache_agree(make_gpt, positions):
    model = make_gpt(positions, max_len=12)
    prompt = [4, 9, 5, 11]
    # 20 new tokens from a prompt of 4 passes max_len 12: the window has to slide
    kwargs = dict(max_new_tokens=20, temperature=0.0)
    cached = generate(model, prompt, use_cache=True, **kwargs)
    uncached = generate(model, prompt, use_cache=False, **kwargs)
    assert len(cached) == 20
    assert _tokens(cached) == _tokens(uncached)
    for a, b in zip(cached, uncached, strict=True):
        assert a.prob == pytest.approx(b.prob, abs=1e-5)
    # sampling with a seed is reproducible and also cache-independent
    sampled = dict(max_new_tokens=16, temperature=1.0, top_k=8, seed=7)
    s_cached = generate(model, prompt, use_cache=True, **sampled)
    s_uncached = generate(model, prompt, use_cache=False, **sampled)
    assert _tokens(s_cached) == _tokens(s_uncached)
    assert _tokens(generate(model, prompt, use_cache=True, **sampled)) == _tokens(s_cached)


@pytest.mark.parametrize("positions", ["sinusoidal", "alibi"])
def test_greedy_generation_is_argmax_of_the_full_forward(make_gpt, positions):
    model = make_gpt(positions, max_len=10)
    ids = [4, 5, 6]
    out = generate(model, ids, 12, temperature=0.0)
    with torch.no_grad():
        for sample in out:
            window = ids[-10:]  # past max_len the context is the last max_len tokens
            logits = model(torch.tensor([window]))[0, -1]
            assert sample.token == int(logits.argmax())
            assert sample.prob == 1.0
            assert sample.top[0][0] == sample.token
            ids.append(sample.token)


def test_generation_reports_probabilities_and_alternatives(make_gpt):
    model = make_gpt("rope")
    out = generate(model, [4, 5], 5, temperature=0.8, seed=3, n_alternatives=4)
    for sample in out:
        assert 0.0 < sample.prob <= 1.0
        assert len(sample.top) == 4
        probs = [p for _, p in sample.top]
        assert probs == sorted(probs, reverse=True)
        assert sum(probs) <= 1.0 + 1e-6
        assert 4 <= len({t for t, _ in sample.top})  # distinct tokens


def test_seeds_reproduce_and_samples_follow_the_tempered_distribution(make_gpt):
    """Same seed, same text; different seeds differ; and over many seeds the first character
    is drawn with the probabilities softmax(logits / T) gives it (a sampler that ignored
    the temperature, took the argmax or skipped the special-token mask would fail)."""
    model = make_gpt("none")
    runs = {tuple(_tokens(generate(model, [4], 12, temperature=1.5, seed=s))) for s in range(4)}
    assert len(runs) > 1
    again = [_tokens(generate(model, [4], 12, temperature=1.5, seed=s)) for s in range(4)]
    assert {tuple(r) for r in again} == runs
    assert _tokens(generate(model, [4], 12, temperature=1.5, seed=2)) == again[2]

    with torch.no_grad():
        logits = model(torch.tensor([[4]]))[0, -1]
    logits[:4] = float("-inf")  # PAD/SOS/EOS/UNK are never written
    expected = torch.softmax(logits / 1.5, dim=-1).numpy()
    n = 600
    firsts = [generate(model, [4], 1, temperature=1.5, seed=s)[0] for s in range(n)]
    counts = np.bincount([f.token for f in firsts], minlength=len(expected)) / n
    assert counts[:4].sum() == 0
    assert np.abs(counts - expected).max() < 4 * np.sqrt(0.25 / n)  # 4 sigma of the largest variance
    assert all(f.prob == pytest.approx(expected[f.token], abs=1e-5) for f in firsts[:20])


# ------------------------------------------------------------------ filter_logits


def test_temperature_zero_is_one_hot():
    logits = torch.tensor([0.1, 2.0, -1.0, 1.9])
    probs = filter_logits(logits, temperature=0.0)
    assert torch.equal(probs, torch.tensor([0.0, 1.0, 0.0, 0.0]))


def test_temperature_scales_logits():
    logits = torch.tensor([1.0, 2.0, 3.0])
    torch.testing.assert_close(filter_logits(logits, temperature=1.0), torch.softmax(logits, -1))
    torch.testing.assert_close(filter_logits(logits, temperature=0.5), torch.softmax(logits * 2, -1))
    sharper = filter_logits(logits, temperature=0.5)
    flatter = filter_logits(logits, temperature=2.0)
    assert sharper[2] > filter_logits(logits)[2] > flatter[2]


def test_top_k_keeps_exactly_k_tokens():
    logits = torch.tensor([0.5, 3.0, -1.0, 2.0, 1.0, 0.0])
    probs = filter_logits(logits, top_k=3)
    kept = torch.nonzero(probs).flatten().tolist()
    assert kept == [1, 3, 4]
    torch.testing.assert_close(probs[kept], torch.softmax(logits[kept], -1))
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-6)
    # top_k at or above the vocabulary keeps everything
    torch.testing.assert_close(filter_logits(logits, top_k=6), torch.softmax(logits, -1))


def test_top_p_keeps_smallest_prefix_reaching_p():
    base = torch.tensor([0.05, 0.5, 0.15, 0.3])  # sorted: 0.5, 0.3, 0.15, 0.05
    logits = base.log()
    # 0.5 < 0.6 so a second token is needed; 0.5 + 0.3 = 0.8 reaches 0.6
    probs = filter_logits(logits, top_p=0.6)
    assert torch.nonzero(probs).flatten().tolist() == [1, 3]
    torch.testing.assert_close(probs[[1, 3]], torch.tensor([0.5, 0.3]) / 0.8)
    # 0.8 < 0.9 so the third token joins; the last is dropped
    assert torch.nonzero(filter_logits(logits, top_p=0.9)).flatten().tolist() == [1, 2, 3]
    # a small p still keeps the most likely token
    assert torch.nonzero(filter_logits(logits, top_p=0.1)).flatten().tolist() == [1]
    # batched rows are filtered independently
    batch = torch.stack([logits, logits.flip(0)])
    out = filter_logits(batch, top_p=0.6)
    assert torch.nonzero(out[1]).flatten().tolist() == [0, 2]


def test_top_k_and_top_p_combine():
    logits = torch.tensor([0.4, 0.3, 0.2, 0.1]).log()
    probs = filter_logits(logits, top_k=3, top_p=0.5)
    # top-3 renormalised: 0.444, 0.333, 0.222; 0.444 < 0.5 so two are kept
    assert torch.nonzero(probs).flatten().tolist() == [0, 1]


# ------------------------------------------------------------------ seq2seq greedy decoding


def test_greedy_decode_matches_step_by_step_argmax(make_seq2seq):
    model = make_seq2seq("rope", vocab_size=16)
    src = torch.tensor([[4, 5, 6, EOS_ID], [7, 8, EOS_ID, PAD_ID]])
    outputs = greedy_decode(model, src, 6)
    assert len(outputs) == 2
    with torch.no_grad():
        for row, out in zip(src, outputs, strict=True):
            tgt = [SOS_ID]
            expected: list[int] = []
            for _ in range(6):
                logits = model(row[None], torch.tensor([tgt]))[0, -1]
                logits[PAD_ID] = logits[SOS_ID] = float("-inf")
                nxt = int(logits.argmax())
                if nxt == EOS_ID:
                    break
                expected.append(nxt)
                tgt.append(nxt)
            assert out == expected
            assert EOS_ID not in out and SOS_ID not in out and PAD_ID not in out


class _FavoursSpecials:
    """A Seq2Seq whose decoder strongly prefers PAD and SOS: greedy decoding must skip them."""

    def __init__(self, model) -> None:
        self.model = model

    def encode(self, src, **kwargs):
        return self.model.encode(src, **kwargs)

    def decode(self, tgt, memory, src, **kwargs):
        logits = self.model.decode(tgt, memory, src, **kwargs).clone()
        logits[..., PAD_ID] += 100.0
        logits[..., SOS_ID] += 50.0
        return logits


def test_greedy_decode_never_emits_pad_or_sos(make_seq2seq):
    model = make_seq2seq("none")
    src = torch.tensor([[4, 5, 6, EOS_ID]])
    biased = greedy_decode(_FavoursSpecials(model), src, 5)
    plain = greedy_decode(model, src, 5)
    assert biased == plain


# ------------------------------------------------------------------ trace


def test_trace_gpt_shapes_and_rows(make_gpt):
    tokenizer = CharTokenizer("abcdefghijkl")  # 16 ids with the four specials
    model = make_gpt("alibi", n_layers=3, n_heads=2)
    result = trace_gpt(model, tokenizer, "abcé")
    attention = result.attention["self"]
    assert isinstance(attention, np.ndarray)
    assert attention.shape == (3, 2, 4, 4)  # (L, H, T, T)
    np.testing.assert_allclose(attention.sum(-1), np.ones((3, 2, 4)), atol=1e-5)
    capture = AttentionCapture()
    with torch.no_grad():
        model(torch.tensor([result.ids]), capture=capture)
    for layer in range(3):
        for head in range(2):
            np.testing.assert_allclose(
                attention[layer, head], capture[f"self.{layer}"].weights[0, head].numpy(), atol=1e-6
            )
    assert np.all(attention[..., np.triu_indices(4, 1)[0], np.triu_indices(4, 1)[1]] == 0.0)
    assert result.ids == [4, 5, 6, UNK_ID]
    assert result.unknown == [(3, "é")]
    assert result.tokens == ["a", "b", "c", "<unk>"]
    assert result.next_token_probs.shape == (16,)
    assert result.next_token_probs.sum() == pytest.approx(1.0, abs=1e-5)
    with torch.no_grad():
        logits = model(torch.tensor([result.ids]))[0, -1]
    np.testing.assert_allclose(result.next_token_probs, torch.softmax(logits, -1).numpy(), atol=1e-5)


def test_trace_gpt_options_reach_the_model(make_gpt):
    tokenizer = CharTokenizer("abcdefghijkl")
    model = make_gpt("none")
    free = trace_gpt(model, tokenizer, "abcd", InferenceOptions(causal=False)).attention["self"]
    assert np.all(free > 0.0)


def test_trace_seq2seq_shapes(make_seq2seq):
    tokenizer = reversal_tokenizer("abcdefghijkl")
    model = make_seq2seq("sinusoidal", vocab_size=len(tokenizer), n_layers=3)
    result = trace_seq2seq(model, tokenizer, "abc", max_new_tokens=5)
    Ts = 4  # text + EOS
    Tt = 1 + len(result.output)  # SOS + output
    assert result.source_tokens == ["a", "b", "c", "<eos>"]
    assert result.target_tokens[0] == "<sos>" and len(result.target_tokens) == Tt
    assert result.attention["encoder_self"].shape == (3, 2, Ts, Ts)
    assert result.attention["decoder_self"].shape == (3, 2, Tt, Tt)
    assert result.attention["cross"].shape == (3, 2, Tt, Ts)
    for weights in result.attention.values():
        np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    src = encode_source(tokenizer, ["abc"])
    expected = greedy_decode(model, src, 5)[0]
    assert result.output == tokenizer.decode(expected)
    assert len(result.output) <= 5
    # the arrays are the teacher-forced pass over SOS + output, layer by layer
    capture = AttentionCapture()
    with torch.no_grad():
        model(src, torch.tensor([[SOS_ID, *expected]]), capture=capture)
    for kind in ("encoder_self", "decoder_self", "cross"):
        for layer in range(3):
            np.testing.assert_allclose(
                result.attention[kind][layer], capture[f"{kind}.{layer}"].weights[0].numpy(), atol=1e-6
            )


def test_trace_rejects_bad_text(make_gpt):
    tokenizer = CharTokenizer("abcdefghijkl")
    model = make_gpt("learned", max_len=8)
    with pytest.raises(InputError):
        trace_gpt(model, tokenizer, "")
    with pytest.raises(InputError, match="8"):
        trace_gpt(model, tokenizer, "a" * 9)
