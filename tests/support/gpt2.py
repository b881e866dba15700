"""Small GPT-2-family sources for the import tests: a random GPT2LMHeadModel saved with
save_pretrained, a byte-level BPE tokenizer.json trained with `tokenizers`, and the same
weights in nanoGPT's ckpt.pt layout with a meta.pkl character vocabulary.

`transformers` is imported by the callers' fixture (requirements-import.txt): pass its module in.
"""

from __future__ import annotations

import json
import pickle  # tests write nanoGPT's meta.pkl as nanoGPT does; the library only reads it restrictedly
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

CORPUS = [
    "hello world, hello there.\nthe world is wide and the sea is deep.",
    "Hello world!\n\tTabs and spaces: the quick brown fox jumps over the lazy dog.",
    "attention is all you need; the heads attend to the world.",
] * 20
CHARS = sorted(set("".join(CORPUS)))  # a character vocabulary (nanoGPT shakespeare-char style)
SHAPE = dict(n_layer=2, n_head=4, n_embd=32, n_positions=64)


def train_bpe(folder: Path, vocab_size: int = 300) -> tuple[Path, int]:
    """A byte-level BPE tokenizer.json (GPT-2 style, <|endoftext|> special) and its size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tokenizer.json"
    tok.save(str(path))
    return path, tok.get_vocab_size()


def random_gpt2(transformers: ModuleType, vocab_size: int, activation: str = "gelu_new", **extra: Any) -> Any:
    """A GPT2LMHeadModel (eager attention) with every weight, LayerNorms included, off its init."""
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=vocab_size,
        activation_function=activation,
        eos_token_id=0,
        bos_token_id=0,
        **SHAPE,
        **extra,
    )
    config._attn_implementation = "eager"
    model = transformers.GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln" in name:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.3 * torch.randn_like(p))
            else:
                p.add_(0.05 * torch.randn_like(p))
    return model


def zero_biases(model: Any) -> Any:
    """nanoGPT bias=False computes a GPT-2 whose biases are all zero: the reference for it."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.zero_()
    return model


def nanogpt_state_dict(hf_model: Any, bias: bool = True) -> dict[str, torch.Tensor]:
    """The HF model's weights in nanoGPT's layout: nn.Linear (out, in), i.e. Conv1D transposed,
    under torch.compile's "_orig_mod." prefix, lm_head tied, one causal-mask buffer as without flash."""
    sd = {}
    for key, value in hf_model.state_dict().items():
        if key.endswith("attn.bias") and value.dim() == 4 or (not bias and key.endswith(".bias")):
            continue
        if any(part in key for part in ("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            value = value.T
        sd["_orig_mod." + key] = value.clone().contiguous()
    n = hf_model.config.n_positions
    sd["_orig_mod.transformer.h.0.attn.bias"] = torch.tril(torch.ones(n, n)).view(1, 1, n, n)
    sd["_orig_mod.lm_head.weight"] = sd["_orig_mod.transformer.wte.weight"]
    return sd


def write_nanogpt(folder: Path, hf_model: Any, *, bias: bool = True, meta: bool = True) -> Path:
    """nanoGPT's out dir: ckpt.pt (model, model_args, ...) and, for a character run, meta.pkl."""
    folder.mkdir(parents=True, exist_ok=True)
    cfg = hf_model.config
    model_args = dict(
        n_layer=cfg.n_layer, n_head=cfg.n_head, n_embd=cfg.n_embd, block_size=cfg.n_positions,
        bias=bias, vocab_size=cfg.vocab_size, dropout=0.0,
    )  # fmt: skip
    ckpt = {
        "model": nanogpt_state_dict(hf_model, bias),
        "model_args": model_args,
        "iter_num": 5000,
        "best_val_loss": torch.tensor(1.47),
        "config": {"dataset": "shakespeare_char", "learning_rate": 1e-3},
    }
    torch.save(ckpt, folder / "ckpt.pt")
    if meta:
        itos = dict(enumerate(CHARS))
        payload = {"vocab_size": len(CHARS), "itos": itos, "stoi": {c: i for i, c in itos.items()}}
        (folder / "meta.pkl").write_bytes(pickle.dumps(payload))
    return folder


def write_hf_gpt2(folder: Path, *, seed: int = 0) -> Path:
    """A GPT-2-family folder as `huggingface-cli download` gives it (config.json, Conv1D
    model.safetensors with random weights, the trained BPE tokenizer.json), written with torch
    alone: the app's tests open an imported BPE model without `transformers` installed."""
    from safetensors.torch import save_file

    _, vocab = train_bpe(folder)
    torch.manual_seed(seed)
    d, n = SHAPE["n_embd"], SHAPE["n_positions"]
    sd = {"wte.weight": torch.randn(vocab, d) * 0.5, "wpe.weight": torch.randn(n, d) * 0.1}
    for i in range(SHAPE["n_layer"]):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            sd[p + ln + ".weight"], sd[p + ln + ".bias"] = 1 + 0.1 * torch.randn(d), 0.1 * torch.randn(d)
        shapes = {
            "attn.c_attn": (d, 3 * d),
            "attn.c_proj": (d, d),
            "mlp.c_fc": (d, 4 * d),
            "mlp.c_proj": (4 * d, d),
        }
        for name, (fan_in, fan_out) in shapes.items():
            sd[p + name + ".weight"] = torch.randn(fan_in, fan_out) * 0.3
            sd[p + name + ".bias"] = 0.1 * torch.randn(fan_out)
    sd["ln_f.weight"], sd["ln_f.bias"] = torch.ones(d), torch.zeros(d)
    save_file(sd, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new"}
    (folder / "config.json").write_text(
        json.dumps({**config, **SHAPE, "vocab_size": vocab, "eos_token_id": 0})
    )
    return folder
