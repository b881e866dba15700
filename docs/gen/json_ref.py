"""The shapes of the command line's --json output, from the real commands run on shipped
checkpoints while the site is built (in this process: the library is imported once).

Each top-level key has a line of meaning here (the code has none); a key the output has and
this file does not describe, or describes and the output lacks, fails the build.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import tempfile
from dataclasses import dataclass
from typing import Any

from . import md_escape, shapes, table

INDUCTION_CLEAN, INDUCTION_CORRUPT = "qwhzkfjtmbrxqwhzkfjtmbrx", "qwhzkfjtmbrxpnsgadeucvlo"


@dataclass(frozen=True)
class Example:
    title: str
    command: str  # as a reader types it
    meaning: dict[str, str]  # top-level key -> what it holds


EXAMPLES = (
    Example(
        "checkpoints",
        "python -m transformer_core checkpoints --json",
        {
            "checkpoints": "one entry per shipped (or imported, or trained) checkpoint: name, task, config, "
            "parameter count, metrics (`key?`: only some checkpoints have it) and the command that trained it"
        },
    ),
    Example(
        "trace, encoder-decoder",
        "python -m transformer_core trace reverse-sinusoidal abc --json",
        {
            "checkpoint": "the checkpoint's name",
            "input": "the text given",
            "output": "the model's answer (greedy)",
            "tokens": "the tokens of the axes: `source` (keys of encoder and cross-attention), "
            "`target` (decoder)",
            "attention": "weights `[layer][head][query][key]` for `encoder_self`, `decoder_self` and `cross`",
        },
    ),
    Example(
        "trace, GPT",
        "python -m transformer_core trace gpt-sinusoidal 'def f(x):' --json",
        {
            "checkpoint": "the checkpoint's name",
            "input": "the text given",
            "output": "the most likely next character",
            "tokens": "`source`: the tokens of both axes",
            "attention": "`self`: weights `[layer][head][query][key]` "
            "(0 above the diagonal: the causal mask)",
        },
    ),
    Example(
        "trace with a sample",
        "python -m transformer_core trace gpt-rope 'def f(x):' --generate 8 --seed 3 --json",
        {
            "checkpoint": "the checkpoint's name",
            "input": "the prompt",
            "output": "the most likely character after prompt and sample",
            "tokens": "`source`: prompt + sample",
            "attention": "`self`: weights over prompt + sample",
            "generated": "the sampled text (temperature 0.8, seeded)",
            "generated_from": "index of the first sampled token on the axes",
        },
    ),
    Example(
        "eval, reversal",
        "python -m transformer_core eval reverse-rope --lengths 3,5 --samples 20 --json",
        {
            "checkpoint": "the checkpoint's name",
            "exact_match": "share of strings reversed exactly, per length",
            "token_accuracy": "share of characters right, per length",
        },
    ),
    Example(
        "eval, GPT",
        "python -m transformer_core eval gpt-sinusoidal --samples 20 --json",
        {
            "checkpoint": "the checkpoint's name",
            "val_loss": "cross-entropy on held-out text, nats per character",
            "perplexity": "exp(val_loss)",
        },
    ),
    Example(
        "generate",
        "python -m transformer_core generate gpt-sinusoidal 'The ' --max-new-tokens 5 --json",
        {
            "checkpoint": "the checkpoint's name",
            "prompt": "the prompt",
            "text": "the sampled continuation",
            "decoding": "how it was decoded: `sample`, `greedy` (temperature 0) or `beam` (`--beam W`, which "
            "reports `beam` instead of `tokens`)",
            "tokens": "each sampled token with its probability and the most likely alternatives",
            "unknown_characters": "characters of the prompt the model's vocabulary lacks (read as `<unk>`)",
        },
    ),
    Example(
        "heads",
        "python -m transformer_core heads gpt-induction --json",
        {
            "checkpoint": "the checkpoint's name",
            "ablation_data": "what the ablation sweep ran on, in words",
            "induction_probe_data": "the induction probe's text, in words (null where none ran)",
            "heads": "per head: detector `scores` (null where one does not apply), `ablation` (the loss "
            "change when the head is zeroed) and `induction_probe`",
            "composition": "Q-, K- and V-composition `S[l1][h1][l2][h2]`, null unless l1 < l2",
        },
    ),
    Example(
        "patch",
        "python -m transformer_core patch gpt-induction "
        f"--clean {INDUCTION_CLEAN} --corrupt {INDUCTION_CORRUPT} --json",
        {
            "metric": "`loss` (the clean answer's), or `logit_diff` with --answer/--wrong",
            "clean": "the metric on the clean text",
            "corrupted": "the metric on the corrupted text",
            "heads": "the metric with each head's output patched from the clean run, `[layer][head]`",
        },
    ),
    Example(
        "export",
        "python -m transformer_core export gpt-learned --format transformer-lens "
        "--out {tmp}/gpt-learned --json",
        {
            "checkpoint": "the checkpoint's name",
            "format": "`transformer-lens`",
            "out": "the folder written",
            "files": "the files in it",
        },
    ),
)


def run_json(command: str) -> Any:
    """Run a `python -m transformer_core ...` line in this process; its one JSON object."""
    from transformer_core.cli import main

    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "transformer_core"], command
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(out):
        status = main([a.replace("{tmp}", tmp) for a in argv[3:]])
    if status != 0:
        raise RuntimeError(f"{command}: exit status {status}")
    return json.loads(out.getvalue())


def example_markdown(example: Example) -> str:
    value = run_json(example.command)
    keys = list(value)
    missing = [k for k in keys if k not in example.meaning]
    stale = [k for k in example.meaning if k not in keys]
    if missing or stale:
        raise ValueError(f"{example.command}: keys without a meaning {missing}, described but absent {stale}")
    shown = example.command.replace("{tmp}", "/tmp")
    rows = [[f"`{k}`", md_escape(example.meaning[k])] for k in keys]
    return "\n".join(
        [
            f"## {example.title}",
            "",
            f"```bash\n{shown}\n```",
            "",
            f'```json title="output shape"\n{shapes.render(shapes.shape(value))}\n```',
            "",
            table(["Key", "What it holds"], rows),
            "",
        ]
    )


def markdown() -> str:
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small models: one thread is fastest and keeps a shared box free
    try:
        return "\n".join(example_markdown(e) for e in EXAMPLES)
    finally:
        torch.set_num_threads(threads)
