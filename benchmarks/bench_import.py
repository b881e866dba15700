"""Import and explore a GPT-2-small-shaped model (124M parameters, random weights) on CPU.

    python benchmarks/bench_import.py [--tokens 64] [--repeats 5] [--threads 2]

Writes, in a temporary folder, what `huggingface-cli download gpt2` gives (config.json,
model.safetensors in Hugging Face's Conv1D layout, a byte-level BPE tokenizer.json of 50257
tokens) with torch alone, no transformers and no network. Then, each stage in a fresh
process so its peak RSS is its own:
- import: `import_model(..., "hf", out)` (read, check, map, save the checkpoint folder);
- page: what an app process does for the /gpt explorer: `load_checkpoint` once, then the
  page's computations on a text of --tokens tokens (`gpt_view`, `step_probs` and
  `top_tokens` of app/lab/explorer_compute.py: a forward pass with every head's attention
  captured, the next-token probabilities after every position), first run and the median of
  --repeats reruns (uncached: the app caches these, so a real rerun costs nearly nothing);
- app: the real /gpt page (Streamlit's AppTest running app/Home.py, the model in
  ATTENTION_LAB_MODELS_DIR) on a prompt of --tokens tokens typed into it, its default
  sampled tokens included: the first page run (the model loads), the median of --repeats
  page runs each on a new prompt (everything computed anew, the model loaded), a rerun of
  the same view (the app's caches), and a new prompt with 16 and with 80 sampled tokens. As
  on a server, each page script is compiled once (attention_lab.testing.apptest's shared
  script cache), and the app's torch ops get --threads threads (ATTENTION_LAB_TORCH_THREADS; the
  app's default is half the cores: --threads 1 here).
Prints seconds and peak / current resident memory (MiB) per stage.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "app")]

SHAPE = {"n_layer": 12, "n_head": 12, "n_embd": 768, "n_positions": 1024, "vocab_size": 50257}
TEXT = "The attention of every head is a map from each token to the tokens before it. " * 8


def rss_mib() -> tuple[float, float]:
    """(peak, current) resident memory of this process in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    current = next(
        int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("VmRSS:")
    )
    return peak, current


def write_gpt2(folder: Path) -> None:
    """config.json, model.safetensors (random, Conv1D (in, out) weights) and tokenizer.json."""
    import torch
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    torch.manual_seed(0)
    d, v, n = SHAPE["n_embd"], SHAPE["vocab_size"], SHAPE["n_positions"]
    sd = {"wte.weight": torch.randn(v, d) * 0.02, "wpe.weight": torch.randn(n, d) * 0.01}
    for i in range(SHAPE["n_layer"]):
        p = f"h.{i}."
        for ln in ("ln_1", "ln_2"):
            sd[p + ln + ".weight"], sd[p + ln + ".bias"] = torch.ones(d), torch.zeros(d)
        linears = {"attn.c_attn": (d, 3 * d), "attn.c_proj": (d, d), "mlp.c_fc": (d, 4 * d)}
        for name, (fan_in, fan_out) in {**linears, "mlp.c_proj": (4 * d, d)}.items():
            sd[p + name + ".weight"] = torch.randn(fan_in, fan_out) * 0.02
            sd[p + name + ".bias"] = torch.zeros(fan_out)
    sd["ln_f.weight"], sd["ln_f.bias"] = torch.ones(d), torch.zeros(d)
    save_file(sd, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new"}
    (folder / "config.json").write_text(json.dumps({**config, **SHAPE, "eos_token_id": v - 1}))
    alphabet = pre_tokenizers.ByteLevel.alphabet()  # 256 byte symbols, then pairs of them: GPT-2's size
    pairs = [(a, b) for a in sorted(alphabet) for b in sorted(alphabet)][: v - 1 - len(alphabet)]
    vocab = {s: i for i, s in enumerate([*sorted(alphabet), *(a + b for a, b in pairs)])}
    tok = Tokenizer(models.BPE(vocab, pairs))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    tok.save(str(folder / "tokenizer.json"))


def stage_import(folder: Path, out: Path) -> dict:
    from transformer_core.io.importers import import_model

    start = time.perf_counter()
    result = import_model(folder, "hf", out)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "parameters": result.to_json()["parameters"], "rss": rss_mib()}


def stage_page(out: Path, tokens: int, repeats: int) -> dict:
    from attention_lab.models.explorer_compute import gpt_view, step_probs, top_tokens
    from transformer_core import InferenceOptions
    from transformer_core.io import load_checkpoint

    start = time.perf_counter()
    ckpt = load_checkpoint(out)
    load = time.perf_counter() - start
    loaded_rss = rss_mib()
    ids = ckpt.tokenizer.encode(TEXT)[:tokens]
    text = ckpt.tokenizer.decode(ids)
    assert len(ckpt.tokenizer.encode(text)) == tokens, "the text must be exactly --tokens tokens"
    options = InferenceOptions()

    def page() -> float:
        t0 = time.perf_counter()
        view = gpt_view(ckpt, text, options)
        step_probs(ckpt, text, options)
        top_tokens(view.next_probs, ckpt.tokenizer)
        assert view.attention.shape == (12, 12, tokens, tokens)
        return time.perf_counter() - t0

    first = page()
    reruns = [page() for _ in range(repeats)]
    return {
        "load": load,
        "loaded_rss": loaded_rss,
        "first": first,
        "rerun": statistics.median(reruns),
        "rss": rss_mib(),
    }


def stage_app(out: Path, tokens: int, threads: int, repeats: int) -> dict:
    """Server time of real /gpt page runs on the imported model (AppTest, no browser)."""
    import os

    from streamlit.testing.v1 import AppTest

    from attention_lab.testing.apptest import share_script_cache
    from transformer_core.io import load_checkpoint

    share_script_cache()  # each page script compiled once, as a server does

    os.environ.update(ATTENTION_LAB_MODELS_DIR=str(out.parent), ATTENTION_LAB_DEVICE="cpu")
    os.environ["ATTENTION_LAB_RUNS_DIR"] = str(out.parent / "runs")
    os.environ["ATTENTION_LAB_TORCH_THREADS"] = str(threads)  # else the app takes half the cores
    tok = load_checkpoint(out).tokenizer
    offsets = range(0, 4 * (repeats + 1), 4)  # a prompt of `tokens` tokens per offset: each one new
    texts = [tok.decode(tok.encode(TEXT[k:])[:tokens]) for k in offsets]
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=600)
    at.run()
    at.switch_page("views/gpt.py")
    at.query_params = {"checkpoint": out.name, "text": texts[0]}

    def page_run(text: str | None = None) -> float:
        t0 = time.perf_counter()
        (at.text_area(key="gpt_text").set_value(text) if text else at).run()  # typed, as a person would
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key="gpt_checkpoint").value == out.name
        return time.perf_counter() - t0

    first = page_run()
    new = statistics.median(page_run(text) for text in texts[1:])
    cached = page_run()
    assert at.text_area(key="gpt_text").value == texts[-1]
    sampled = at.slider(key="gpt_max_new").value  # the default for a BPE model
    longer = {}
    for n in (16, 80):  # a person asking for more text: each sampled token is one more step
        at.slider(key="gpt_max_new").set_value(n)
        longer[n] = page_run(texts[n // 16 - 1])
    return {
        "first": first,
        "new": new,
        "cached": cached,
        "longer": longer,
        "sampled": sampled,
        "rss": rss_mib(),
    }


def child(args: argparse.Namespace) -> None:
    import torch

    torch.set_num_threads(args.threads)
    if args.stage == "write":
        write_gpt2(args.folder)
        result: dict = {"rss": rss_mib()}
    elif args.stage == "import":
        result = stage_import(args.folder, args.out)
    elif args.stage == "app":
        result = stage_app(args.out, args.tokens, args.threads, args.repeats)
    else:
        result = stage_page(args.out, args.tokens, args.repeats)
    print(json.dumps(result))


def run_stage(stage: str, args: argparse.Namespace, folder: Path, out: Path) -> dict:
    cmd = [sys.executable, __file__, "--stage", stage, "--folder", str(folder), "--out", str(out)]
    cmd += ["--tokens", str(args.tokens), "--repeats", str(args.repeats), "--threads", str(args.threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the goal: 2 CPU cores)")
    parser.add_argument("--stage", choices=["write", "import", "page", "app"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        return child(args)
    with tempfile.TemporaryDirectory() as tmp:
        folder, out = Path(tmp) / "gpt2", Path(tmp) / "imported"
        folder.mkdir()
        run_stage("write", args, folder, out)
        size = (folder / "model.safetensors").stat().st_size / 2**20
        imp = run_stage("import", args, folder, out)
        page = run_stage("page", args, folder, out)
        app = run_stage("app", args, folder, out)
    print(f"GPT-2 small shape, random weights: {imp['parameters']:,} parameters, {size:,.0f} MiB safetensors")
    print(f"torch threads {args.threads}, {args.tokens} tokens, {args.repeats} reruns")
    print(f"import (hf -> checkpoint folder): {imp['seconds']:.2f} s, peak RSS {imp['rss'][0]:,.0f} MiB")
    loaded = page["loaded_rss"][1]
    print(f"load_checkpoint:                  {page['load']:.2f} s, RSS after load {loaded:,.0f} MiB")
    print(f"/gpt page computations, first:    {page['first'] * 1000:.0f} ms")
    print(f"/gpt page computations, rerun:    {page['rerun'] * 1000:.0f} ms (median, uncached)")
    print(f"page process: peak RSS {page['rss'][0]:,.0f} MiB, RSS at the end {page['rss'][1]:,.0f} MiB")
    print(f"real /gpt page run (AppTest), first (loads the model): {app['first']:.2f} s")
    new = f"a new {args.tokens}-token prompt ({app['sampled']} sampled; median of {args.repeats})"
    print(f"real /gpt page run, {new}: {app['new']:.2f} s")
    for n, seconds in app["longer"].items():
        print(f"real /gpt page run, a new prompt with {n} sampled tokens: {seconds:.2f} s")
    print(f"real /gpt page run, the same view again (cached): {app['cached'] * 1000:.0f} ms")
    print(f"app process: peak RSS {app['rss'][0]:,.0f} MiB, RSS at the end {app['rss'][1]:,.0f} MiB")


if __name__ == "__main__":
    main()
