"""What a Transformer costs: parameters read from a built model, FLOPs and attention memory
as functions of the sequence length, and one forward pass timed.

Parameters are never a formula: `parameter_counts` builds the model (on the meta device, so
no memory is spent) and sums `numel()` per component. FLOPs count each multiply-add as two
operations (the usual convention) and are checked against torch's own FLOP counter in the
tests. `chapter_estimates` is the back-of-the-envelope count a textbook writes, kept beside
the real one so the difference can be explained."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from transformer_core.config import ModelConfig
from transformer_core.models import build_model

BYTES_FP32 = 4

#: component of a parameter, by the first dotted parts of its name; the first match wins
COMPONENTS: tuple[tuple[str, str], ...] = (
    ("tok_emb", "token embedding"),
    ("src_emb", "token embeddings (source)"),
    ("tgt_emb", "token embeddings (target)"),
    ("positions", "positions"),
    ("src_positions", "positions"),
    ("tgt_positions", "positions"),
    ("self_attn", "self-attention (W_Q, W_K, W_V, W_O)"),
    ("cross_attn", "cross-attention (W_Q, W_K, W_V, W_O)"),
    ("ffn", "feed-forward (W_1, W_2)"),
    ("norm", "norms"),
    ("lm_head", "output projection (unembedding)"),
)


def _component(name: str) -> str:
    """'encoder.0.self_attn.in_proj.weight' -> 'encoder: self-attention (...)'."""
    parts = name.split(".")
    stack = {"encoder": "encoder: ", "decoder": "decoder: ", "blocks": "blocks: "}.get(parts[0], "")
    for key, label in COMPONENTS:
        if any(p == key or p.startswith(key) for p in parts):
            return stack + label
    return stack + parts[0]


def parameter_counts(config: ModelConfig) -> dict[str, int]:
    """Parameters per component of the model the library builds from `config` (built on the
    meta device: shapes only). A tied output projection is counted once, with the embedding."""
    with torch.device("meta"):
        model = build_model(config)
    counts: dict[str, int] = {}
    for name, p in model.named_parameters():  # shared (tied) tensors are listed once
        key = _component(name)
        counts[key] = counts.get(key, 0) + p.numel()
    return counts


@dataclass(frozen=True)
class ChapterEstimate:
    """The textbook's hand count of an encoder-decoder (no attention biases, the FFN's two
    d x d_ff matrices written twice), per part, for a table beside the built model's count."""

    embeddings: int
    encoder_blocks: int
    decoder_blocks: int
    norms: int
    head: int

    @property
    def total(self) -> int:
        return self.embeddings + self.encoder_blocks + self.decoder_blocks + self.norms + self.head


def chapter_estimates(d_model: int, d_ff: int, vocab_size: int, n_layers: int) -> ChapterEstimate:
    """The estimate as such a chapter writes it: 4 d^2 per attention, 2 (d d_ff + d_ff d) per
    FFN (twice its weights: the double count), 2 d per norm, separate embeddings and head."""
    d, df, V, N = d_model, d_ff, vocab_size, n_layers
    ffn = 2 * (d * df + df * d)
    return ChapterEstimate(
        embeddings=2 * V * d,
        encoder_blocks=N * (4 * d * d + ffn),
        decoder_blocks=N * (2 * 4 * d * d + ffn),
        norms=(2 * N + 3 * N) * 2 * d,
        head=V * d,
    )


@dataclass(frozen=True)
class BlockFlops:
    """FLOPs (2 per multiply-add) of one block's parts at T queries over T keys."""

    attention: int  # Q K^T and the weighted sum of V: 4 T^2 d
    projections: int  # W_Q, W_K, W_V, W_O: 8 T d^2
    ffn: int  # W_1 and W_2 (and W_3 for SwiGLU): 4 T d d_ff (6 T d d_ff)

    @property
    def total(self) -> int:
        return self.attention + self.projections + self.ffn


def block_flops(config: ModelConfig, T: int) -> BlockFlops:
    """One self-attention block at sequence length T (biases, norms and softmax left out:
    they are O(T d) and O(T^2 H), a few per cent at most)."""
    d, df = config.d_model, config.d_ff
    ffn_matrices = 3 if config.activation == "swiglu" else 2
    return BlockFlops(
        attention=4 * T * T * d,
        projections=8 * T * d * d,
        ffn=2 * ffn_matrices * T * d * df if config.mlp else 0,
    )


def chapter_block_flops(d_model: int, d_ff: int, T: int) -> BlockFlops:
    """The chapter's count of an encoder block: attention and projections in multiply-adds,
    the FFN in FLOPs (two per multiply-add): the mix its printed total uses."""
    return BlockFlops(
        attention=2 * T * T * d_model, projections=4 * T * d_model**2, ffn=4 * T * d_model * d_ff
    )


def forward_flops(config: ModelConfig, T: int) -> int:
    """FLOPs of one forward pass of one example: T tokens in (and, for an encoder-decoder,
    T target tokens out), every block plus the output projection."""
    d, V, N = config.d_model, config.vocab_size, config.n_layers
    block = block_flops(config, T).total
    head = 2 * T * d * V
    if config.arch == "gpt":
        return N * block + head
    cross = BlockFlops(attention=4 * T * T * d, projections=8 * T * d * d, ffn=0).total
    return N * block + N * (block + cross) + head


def crossover_length(config: ModelConfig) -> float:
    """The T where a block's attention (4 T^2 d) overtakes its FFN (4 T d d_ff): T = d_ff
    (1.5 d_ff for SwiGLU's three matrices); inf without an FFN."""
    per_token_ffn = block_flops(config, 1).ffn
    return float("inf") if per_token_ffn == 0 else per_token_ffn / (4 * config.d_model)


def attention_memory(T: int, n_heads: int, *, window: int | None = None, fused: bool = False) -> int:
    """Bytes of one layer's attention weights for one example in fp32: H T^2 kept in full; a
    sliding window of W keeps H T min(W, T); a fused kernel (FlashAttention) keeps none of
    the T x T matrix, only one softmax statistic per query and head (H T) for the backward."""
    if fused:
        return n_heads * T * BYTES_FP32
    kept = T if window is None else min(window, T)
    return n_heads * T * kept * BYTES_FP32


def kv_cache_memory(config: ModelConfig, T: int) -> int:
    """Bytes of a KV cache holding T positions of every layer for one example (fp32)."""
    return 2 * config.n_layers * T * config.d_model * BYTES_FP32


@torch.inference_mode()
def time_forward(config: ModelConfig, T: int, repeats: int = 3, device: str = "cpu") -> float:
    """Seconds of one forward pass (the fastest of `repeats`) of a freshly initialised model
    at sequence length T, batch 1 (weights random: time depends on shapes, not values)."""
    model = build_model(config).to(device).eval()
    ids = torch.randint(4, config.vocab_size, (1, T), device=device)
    run = (lambda: model(ids)) if config.arch == "gpt" else (lambda: model(ids, ids))
    run()  # warm-up: allocations and kernel choice
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


@torch.inference_mode()
def matmul_rate(n: int = 256, repeats: int = 5, device: str = "cpu") -> float:
    """FLOP/s this machine reaches on an n x n matrix product: the rate that turns a FLOP
    count into a predicted time."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best


@dataclass(frozen=True)
class CacheStep:
    """One greedy step written twice: with the KV cache (the new token alone is fed) and
    without (the whole prefix is fed again). Their next-token logits must agree."""

    token: int  # the token this step wrote (greedy, from the cached logits)
    fed_cached: int  # positions computed with the cache: the new ones only
    fed_full: int  # positions computed without it: the whole prefix
    seconds_cached: float
    seconds_full: float
    max_logit_gap: float  # max |logits_cached - logits_full|


@torch.inference_mode()
def kv_cache_steps(model: torch.nn.Module, prompt_ids: list[int], n_new: int) -> list[CacheStep]:
    """Greedy decoding of n_new tokens after the prompt, each step run with the KV cache and
    without, timed after one untimed pass of each (the first step of both feeds the whole
    prompt). Stops at the model's max_len. model: a GPT."""
    device = next(model.parameters()).device
    ids, cache, steps = list(prompt_ids), model.new_cache(), []
    n_new = min(n_new, model.config.max_len - len(ids))
    warm = torch.tensor([ids], device=device)
    model(warm, cache=model.new_cache(), last_only=True)  # untimed: first-call costs of either path
    model(warm, last_only=True)
    for _ in range(max(n_new, 0)):
        new = ids[cache.length :]  # (T_new,) the tokens the cache has not seen
        start = time.perf_counter()
        cached = model(torch.tensor([new], device=device), cache=cache, last_only=True)[0, -1]
        middle = time.perf_counter()
        full = model(torch.tensor([ids], device=device), last_only=True)[0, -1]
        end = time.perf_counter()
        token = int(cached.argmax())
        gap = float((cached.float() - full.float()).abs().max())
        steps.append(CacheStep(token, len(new), len(ids), middle - start, end - middle, gap))
        ids.append(token)
    return steps
