"""What attention costs (/cost): parameters of the model the library builds, the chapter's hand
count beside them with every difference named, FLOPs and attention memory across the
sequence length, and one forward pass timed on this server."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import torch

from transformer_core import cost
from transformer_core.capture import AttentionCapture
from transformer_core.config import ModelConfig
from transformer_core.io import Checkpoint

#: sequence lengths the curves are drawn at: 1 to 8,192, evenly on a log axis
LENGTHS = np.unique(np.round(np.logspace(0, 13, 66, base=2)).astype(np.int64))
#: a timed forward pass is refused above these (a 2-core box does ~20 GFLOP in about a second)
MAX_TIMED_FLOPS = 20e9
MAX_TIMED_PARAMETERS = 60_000_000
MAX_TIMED_LENGTH = 4096
_TIMING = threading.Lock()  # one timed pass per process at a time: timings would disturb each other


@dataclass(frozen=True)
class CostSettings:
    """The page's sliders: a Transformer's shape, its block's choices and the sequence length T."""

    arch: str  # "seq2seq" (encoder-decoder) or "gpt" (decoder-only)
    d_model: int
    n_heads: int
    d_ff: int
    n_layers: int  # per stack
    vocab_size: int
    T: int
    positions: str = "sinusoidal"
    norm_position: str = "post"
    norm: str = "layernorm"
    activation: str = "relu"
    tie_weights: bool = False
    attention_bias: bool = False

    def config(self) -> ModelConfig:
        """The library's config for these settings (ConfigError: d_model not divisible by heads)."""
        return ModelConfig(
            arch=self.arch,  # type: ignore[arg-type]
            vocab_size=self.vocab_size,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            d_ff=self.d_ff,
            max_len=max(self.T, 16),
            positions=self.positions,
            norm_position=self.norm_position,  # type: ignore[arg-type]
            norm=self.norm,  # type: ignore[arg-type]
            activation=self.activation,  # type: ignore[arg-type]
            tie_weights=self.tie_weights,
            attention_bias=self.attention_bias,
        )


#: chapter 004's reversal Transformer: 26 letters and PAD, SOS, EOS; strings of length 10
CHAPTER = CostSettings("seq2seq", d_model=96, n_heads=4, d_ff=192, n_layers=2, vocab_size=29, T=10)


@dataclass(frozen=True)
class Comparison:
    """The chapter's hand count against the built model, part by part, and why they differ:
    (reason, estimate minus built) pairs that add up to the whole difference, and what is left."""

    rows: list[tuple[str, int, int]]  # (part, chapter's estimate, built model)
    reasons: list[tuple[str, int]]
    unexplained: int


def compare_with_chapter(settings: CostSettings, built: dict[str, int]) -> Comparison:
    """Only for an encoder-decoder, the model the chapter counts; built: its
    cost.parameter_counts."""
    est = cost.chapter_estimates(settings.d_model, settings.d_ff, settings.vocab_size, settings.n_layers)

    def part(*words: str) -> int:
        return sum(n for name, n in built.items() if any(w in name for w in words))

    rows = [
        ("embeddings", est.embeddings, part("token embeddings", "positions")),
        ("encoder blocks, norms aside", est.encoder_blocks, part("encoder: s", "encoder: f")),
        ("decoder blocks, norms aside", est.decoder_blocks, part("decoder: s", "decoder: c", "decoder: f")),
        ("norms", est.norms, part("norms")),
        ("output projection", est.head, part("output projection")),
    ]  # fmt: skip
    d, df, V, N = settings.d_model, settings.d_ff, settings.vocab_size, settings.n_layers
    ffn_weights = (3 if settings.activation == "swiglu" else 2) * d * df
    ffn_biases = part("feed-forward") // (2 * N) - ffn_weights
    attention_biases = part("attention") - 3 * N * 4 * d * d
    per_norm = d if settings.norm == "rmsnorm" else 2 * d
    final_norms = 2 * per_norm if settings.norm_position == "pre" else 0
    reasons = [
        ("the FFN's weights written twice: 2·(d·d_ff + d_ff·d) a block", 2 * N * (4 * d * df - ffn_weights)),
        ("FFN biases, which the estimate leaves out", -2 * N * ffn_biases),
        ("biases of W_Q, W_K, W_V, W_O, which the estimate leaves out", -attention_biases),
        ("the final norms of a Pre-LN model's two stacks", -final_norms),
        ("RMSNorm has a gain but no bias", 5 * N * d if settings.norm == "rmsnorm" else 0),
        ("learned position tables or relative biases", -part("positions")),
        ("the output projection shares the target embedding (tied)", V * d if settings.tie_weights else 0),
    ]  # fmt: skip
    reasons = [(why, n) for why, n in reasons if n]
    difference = est.total - sum(built.values())
    return Comparison(rows, reasons, difference - sum(n for _, n in reasons))


@dataclass(frozen=True)
class Curves:
    """Per-block FLOPs and one layer's attention memory for one example, at every LENGTHS."""

    lengths: np.ndarray  # (n,)
    attention: np.ndarray  # (n,) FLOPs of Q K^T and weights · V
    projections: np.ndarray  # (n,) FLOPs of W_Q, W_K, W_V, W_O
    ffn: np.ndarray  # (n,) FLOPs of the feed-forward network
    memory_full: np.ndarray  # (n,) bytes of the T x T weights of every head
    memory_window: np.ndarray | None  # (n,) with a sliding window, when one is set
    memory_fused: np.ndarray  # (n,) a fused kernel: one statistic per query and head
    crossover: float  # the T where attention's FLOPs pass the FFN's


def curves(settings: CostSettings, window: int) -> Curves:
    """window: a sliding window's width W, 0 for none."""
    config = settings.config()
    blocks = [cost.block_flops(config, int(T)) for T in LENGTHS]
    H = settings.n_heads
    return Curves(
        lengths=LENGTHS.astype(np.float64),
        attention=np.array([b.attention for b in blocks], dtype=np.float64),
        projections=np.array([b.projections for b in blocks], dtype=np.float64),
        ffn=np.array([b.ffn for b in blocks], dtype=np.float64),
        memory_full=np.array([cost.attention_memory(int(T), H) for T in LENGTHS], dtype=np.float64),
        memory_window=None
        if not window
        else np.array([cost.attention_memory(int(T), H, window=window) for T in LENGTHS], dtype=np.float64),
        memory_fused=np.array(
            [cost.attention_memory(int(T), H, fused=True) for T in LENGTHS], dtype=np.float64
        ),
        crossover=cost.crossover_length(config),
    )


def attention_layers(settings: CostSettings) -> int:
    """Attention layers in one forward pass: N for a GPT; N encoder, N decoder self and N cross."""
    return settings.n_layers * (1 if settings.arch == "gpt" else 3)


@dataclass(frozen=True)
class Timing:
    """One forward pass timed, and the time its FLOP count predicts at this machine's rate."""

    seconds: float
    flops: int
    rate: float  # FLOP/s of a plain matrix product here

    @property
    def predicted(self) -> float:
        return self.flops / self.rate


def timing_refusal(settings: CostSettings, params: int) -> str | None:
    """Why this size (of `params` parameters) is not timed here, or None when it may be."""
    config = settings.config()
    flops = cost.forward_flops(config, settings.T)
    if settings.T > MAX_TIMED_LENGTH:
        return f"T = {settings.T:,} is past the {MAX_TIMED_LENGTH:,} positions timed here: pick a shorter T."
    if params > MAX_TIMED_PARAMETERS:
        return (
            f"{params:,} parameters are more than the {MAX_TIMED_PARAMETERS:,} built for a timing here: "
            "choose a smaller model."
        )
    if flops > MAX_TIMED_FLOPS:
        return (
            f"{flops / 1e9:.1f} GFLOP is more than the {MAX_TIMED_FLOPS / 1e9:.0f} GFLOP timed here: "
            "choose a smaller model or T."
        )
    return None


def time_forward(settings: CostSettings, device: str) -> Timing | None:
    """One forward pass at these settings on `device` (None: another timing is running in this
    process). The caller checks timing_refusal first."""
    if not _TIMING.acquire(blocking=False):
        return None
    try:
        config = settings.config()
        seconds = cost.time_forward(config, settings.T, device=device)
        return Timing(seconds, cost.forward_flops(config, settings.T), cost.matmul_rate(device=device))
    finally:
        _TIMING.release()


#: the KV-cache lesson writes at most this many tokens (each twice: with and without the cache)
MAX_CACHE_STEPS = 64


@dataclass(frozen=True)
class CacheLesson:
    """A GPT's greedy continuation of a prompt written with and without the KV cache."""

    ids: tuple[int, ...]  # prompt and written tokens
    labels: list[str]  # their labels
    prompt_length: int
    steps: list[cost.CacheStep]
    cache_bytes: list[int]  # the cache's size after each step: the prompt and the tokens fed before it

    @property
    def agree(self) -> float:
        """The largest logit gap between the two ways over every step."""
        return max((s.max_logit_gap for s in self.steps), default=0.0)


def cache_lesson(ckpt: Checkpoint, text: str, n_new: int) -> CacheLesson:
    """Write n_new tokens after `text` (InputError: empty, too long) both ways, timed."""
    model, tok = ckpt.model, ckpt.tokenizer
    prompt = tok.encode_checked(text, max_chars=model.config.max_len - 1).ids
    steps = cost.kv_cache_steps(model, prompt, min(n_new, MAX_CACHE_STEPS))
    ids = (*prompt, *(s.token for s in steps))
    sizes = [cost.kv_cache_memory(model.config, len(prompt) + i) for i in range(len(steps))]
    return CacheLesson(ids, tok.token_labels(list(ids)), len(prompt), steps, sizes)


@dataclass(frozen=True)
class CacheStepView:
    """One step opened in one head: the query of the newest token, every key the cache holds
    (the last row is the one this step appended), and the query's attention weights."""

    query: np.ndarray  # (1, d_head)
    keys: np.ndarray  # (t, d_head)
    weights: np.ndarray  # (t,)


@torch.inference_mode()
def cache_step_view(ckpt: Checkpoint, ids: tuple[int, ...], layer: int, head: int) -> CacheStepView:
    """The prefix `ids` traced once: the cached step sees exactly these keys and this query row."""
    capture = AttentionCapture()
    ckpt.model(torch.tensor([list(ids)], device=next(ckpt.model.parameters()).device), capture=capture)
    record = next(r for r in capture.records if r.layer == layer)
    q, k = record.q[0, head, -1:], record.k[0, head]  # (1, d_head), (t, d_head)
    return CacheStepView(
        q.float().cpu().numpy(), k.float().cpu().numpy(), record.weights[0, head, -1].float().cpu().numpy()
    )
