"""Training speed: our GPT against a plain fused reference, and tokens/s for both tasks.

    python benchmarks/bench_training.py [--device cpu|cuda] [--steps 30] [--threads N]

The reference is a minimal GPT of the same shape written directly with
F.scaled_dot_product_attention (learned positions, pre-LN, GELU, tied head), trained on
the same batches; the ratio is our median step time over the reference's.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from transformer_core.config import ModelConfig
from transformer_core.train.presets import prepare_run, train_config


class ReferenceBlock(nn.Module):
    def __init__(self, d: int, h: int, d_ff: int) -> None:
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, d_ff), nn.Linear(d_ff, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ReferenceGPT(nn.Module):
    def __init__(self, c: ModelConfig) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(c.vocab_size, c.d_model), nn.Embedding(c.max_len, c.d_model)
        self.blocks = nn.ModuleList(ReferenceBlock(c.d_model, c.n_heads, c.d_ff) for _ in range(c.n_layers))
        self.ln = nn.LayerNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def time_steps(model: nn.Module, batches: list, loss_fn, device: torch.device) -> list[float]:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times = []
    for batch in batches:
        t0 = time.perf_counter()
        loss = loss_fn(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return times[3:]  # drop warm-up steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} CPU threads")

    # ---- GPT vs fused reference, same config and batches
    lm = train_config("lm", device=args.device, block_size=128)
    ours, task = prepare_run(lm, "learned")
    torch.manual_seed(0)
    ref = ReferenceGPT(ours.config).to(device)
    g = torch.Generator().manual_seed(0)
    batches = [task.batch(lm.batch_size, g, device) for _ in range(args.steps)]

    def lm_loss(model, batch):
        (x,), y = batch.inputs, batch.targets
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten())

    rounds = {"ours": [], "reference": []}
    for _ in range(3):  # interleave so background load hits both alike
        rounds["ours"] += time_steps(ours.train(), batches, lm_loss, device)
        rounds["reference"] += time_steps(ref.train(), batches, lm_loss, device)
    med = {k: statistics.median(v) for k, v in rounds.items()}
    tokens = lm.batch_size * lm.block_size
    n_params = sum(p.numel() for p in ours.parameters())
    print(f"GPT {n_params / 1e6:.2f}M params, batch {lm.batch_size} x {lm.block_size} tokens")
    print(f"  ours      {med['ours'] * 1e3:8.1f} ms/step  {tokens / med['ours']:10,.0f} tokens/s")
    print(f"  reference {med['reference'] * 1e3:8.1f} ms/step  {tokens / med['reference']:10,.0f} tokens/s")
    print(f"  ratio ours/reference = {med['ours'] / med['reference']:.3f}")

    # ---- reversal tokens/s with the shipped reversal size
    rev = train_config("reverse", device=args.device)
    model, rtask = prepare_run(rev, "rope")
    rbatches = [rtask.batch(rev.batch_size, g, device) for _ in range(args.steps)]
    times = time_steps(model.train(), rbatches, lambda m, b: rtask.loss(m, b)[0], device)
    rtokens = statistics.mean(b.tokens for b in rbatches)
    step = statistics.median(times)
    print(
        f"Reversal (d_model 64, 2+2 layers, batch 64): {step * 1e3:.1f} ms/step, "
        f"{rtokens / step:,.0f} tokens/s (source + target tokens, padding included)"
    )


if __name__ == "__main__":
    main()
