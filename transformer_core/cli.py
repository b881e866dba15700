"""Command line: `python -m transformer_core <command>` (see --help).

Every command accepts --json and then prints exactly one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from transformer_core import (
    ATTENTION_KINDS,
    DEVICE_CHOICES,
    GPT,
    POSITION_SCHEMES,
    CheckpointError,
    ConfigError,
    InferenceOptions,
    InputError,
    check_beam_width,
    resolve_device,
)
from transformer_core.config import MODEL_KINDS
from transformer_core.eval_command import evaluate_checkpoint
from transformer_core.explain_command import EXPLAIN_HELP, cmd_explain, explain_arguments
from transformer_core.generate_command import GENERATE_DESCRIPTION, cmd_generate, generate_arguments
from transformer_core.interp import analyze_heads, heads_json, report_composition, trace_gpt, trace_seq2seq
from transformer_core.interp.attribution import weighted_attention
from transformer_core.interp.fill import fill_masks, mark_masks
from transformer_core.interp.generated import GENERATE_HELP, trace_seq2seq_beam, trace_with_sample
from transformer_core.interp.patching import PATCH_HELP, activation_patching, patching_json, patching_table
from transformer_core.interp.trace import JSON_DECIMALS, TRACE_JSON_HELP
from transformer_core.io import (
    export_transformer_lens,
    list_checkpoints,
    load_checkpoint,
    read_meta,
    resolve_checkpoint,
    save_checkpoint,
)
from transformer_core.io.importers.command import IMPORT_HELP, cmd_import, import_arguments
from transformer_core.models import BERT
from transformer_core.plugins import COMMANDS_GROUP, load_plugins
from transformer_core.profile_command import PROFILE_HELP, cmd_profile, profile_arguments
from transformer_core.train import (
    REPORT_LENGTHS,
    TASKS,
    DoneEvent,
    EvalEvent,
    StepEvent,
    TrainConfig,
    Trainer,
    default_positions,
    prepare_run,
    train_config,
)
from transformer_core.train.distributed import (
    World,
    check_global_batch,
    distribute,
    main_rank_events,
    process_group,
    world_from_env,
)


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str) -> None:
    print(json.dumps(payload, ensure_ascii=False) if args.json else text)


def parse_ablation(items: list[str], arch: str) -> frozenset[tuple[str, int, int]]:
    """'L.H' (GPT self-attention, seq2seq cross-attention) or 'kind:L.H'."""
    result = set()
    for item in items:
        kind, _, spec = item.rpartition(":")
        kind = kind or ("self" if arch == "gpt" else "cross")
        try:
            layer, head = (int(x) for x in spec.split("."))
        except ValueError:
            raise ConfigError(f"ablate: {item!r} is not L.H (e.g. 0.1) or kind:L.H") from None
        if kind not in ATTENTION_KINDS:
            raise ConfigError(f"ablate: kind {kind!r} is not one of {ATTENTION_KINDS}")
        result.add((kind, layer, head))
    return frozenset(result)


def _check_heads(options: InferenceOptions, n_layers: int, n_heads: int) -> None:
    for kind, layer, head in options.ablate:
        if layer >= n_layers or head >= n_heads:
            raise ConfigError(f"ablate: {kind}:{layer}.{head} is outside {n_layers} layers x {n_heads} heads")


def cmd_checkpoints(args: argparse.Namespace) -> None:
    items = []
    for name in list_checkpoints():
        meta = read_meta(resolve_checkpoint(name))
        items.append(
            {
                "name": name,
                "task": meta["task"],
                "config": meta["config"],
                "parameters": meta.get("parameters"),
                "metrics": meta.get("metrics", {}),
                "command": meta.get("command"),
            }
        )
    lines = [f"{'name':<20}{'task':<9}{'params':>9}  metrics"]
    for it in items:
        m = it["metrics"]
        if it["task"] == "lm":
            summary = f"val_loss {m.get('val_loss', float('nan')):.3f} nats/char"
        elif it["task"] == "mlm":
            nan = float("nan")
            summary = (
                f"masked {m.get('masked_accuracy', nan):.3f} (chance {m.get('chance_accuracy', nan):.3f})"
            )
        else:
            em = m.get("exact_match", {})
            summary = "exact " + " ".join(f"{k}:{v:.2f}" for k, v in em.items())
        lines.append(f"{it['name']:<20}{it['task']:<9}{it['parameters'] or 0:>9,}  {summary}")
    _emit(args, {"checkpoints": items}, "\n".join(lines))


def cmd_trace(args: argparse.Namespace) -> None:
    ckpt = load_checkpoint(args.checkpoint, resolve_device(args.device))
    options = InferenceOptions(
        causal=not args.no_causal,
        padding_mask=not args.no_padding_mask,
        positions=not args.drop_positions,
        ablate=parse_ablation(args.ablate, ckpt.config.arch),
        sliding_window=args.window,
    )
    _check_heads(options, ckpt.config.n_layers, ckpt.config.n_heads)
    extra: dict[str, Any] = {}
    width = None if args.beam is None else check_beam_width(args.beam)
    if args.generate is not None:
        tr, extra, text = trace_with_sample(ckpt, args.text, args.generate, args.seed, options, beam=width)
    elif width is not None and isinstance(ckpt.model, GPT):
        raise ConfigError("trace --beam: a GPT searches what it writes; add --generate N (tokens to write)")
    elif width is not None:
        tr, extra, text = trace_seq2seq_beam(ckpt, args.text, width, options)
    elif isinstance(ckpt.model, BERT):
        fill = fill_masks(ckpt.model, ckpt.tokenizer, mark_masks(args.text), options)
        tr = fill.trace
        extra = {"guesses": [{"position": g.position, "candidates": g.candidates} for g in fill.guesses]}
        text = f"{ckpt.name}: {args.text!r} filled: {fill.filled!r}"
    elif isinstance(ckpt.model, GPT):
        tr = trace_gpt(ckpt.model, ckpt.tokenizer, args.text, options)
        text = f"{ckpt.name}: next token after {args.text!r}: {tr.output!r}"
    else:
        tr = trace_seq2seq(ckpt.model, ckpt.tokenizer, args.text, options)
        text = f"{ckpt.name}: {args.text!r} -> {tr.output!r}"
    payload = {**tr.to_json(ckpt.name), **extra}
    if args.value_weighted:  # ||alpha_ij v_j W_O^h|| beside the weights, same layout
        weighted = weighted_attention(ckpt.model, tr.capture)
        payload["weighted"] = {
            k: np.round(w.astype(float), JSON_DECIMALS).tolist() for k, w in weighted.items()
        }
    text += "\n" + (", ".join(f"{kind} {w.shape}" for kind, w in tr.attention.items()) or NOTHING_TO_ATTEND)
    if tr.unknown:
        text += f"\nreplaced by <unk>: {payload['unknown_characters']}"
    _emit(args, payload, text)


NOTHING_TO_ATTEND = "no attention: the decoder reads one fixed context vector (the encoder's final state)"


def cmd_eval(args: argparse.Namespace) -> None:
    ckpt = load_checkpoint(args.checkpoint, resolve_device(args.device))
    torch.manual_seed(args.seed)
    result, text = evaluate_checkpoint(ckpt, args.lengths, args.samples, args.seed, args.corpus)
    _emit(args, {"checkpoint": ckpt.name, **result}, text)


TRAIN_FLAGS = (  # `train` options that go into TrainConfig as they are
    "steps", "batch_size", "lr", "schedule", "warmup", "seed", "device", "corpus",
    "label_smoothing", "eval_every", "block_size", "random_positions",
)  # fmt: skip


def cmd_train(args: argparse.Namespace) -> None:
    # None = the task's preset (transformer_core.train.presets)
    train = train_config(args.task, **{name: getattr(args, name) for name in TRAIN_FLAGS})
    world = world_from_env()  # rank 0 of 1 unless started by torchrun
    check_global_batch(train.batch_size, world)
    with process_group(world, train.device):
        _train(args, train, world)


def _train(args: argparse.Namespace, train: TrainConfig, world: World) -> None:
    """One process's part of a run: under torchrun every rank trains its shard, rank 0
    alone reports, logs and saves (transformer_core.train.distributed)."""
    shape = ("d_model", "d_ff", "n_layers", "n_heads", "norm_position", "norm", "activation")
    overrides = {k: getattr(args, k) for k in shape if getattr(args, k)}
    block = [f"--{k.replace('_', '-')}" for k in shape[4:] if getattr(args, k)]
    if block and args.arch != "transformer":
        raise ConfigError(f"{', '.join(block)}: a {args.arch!r} model has no Transformer block to change")
    positions = args.positions or default_positions(args.arch)
    model, task = prepare_run(train, positions, model=args.arch, **overrides)
    launcher = f"torchrun --nproc_per_node={world.size} -m" if world.distributed else "python -m"
    command = f"{launcher} transformer_core " + shlex.join(sys.argv[1:])
    quiet = args.quiet or not world.is_main
    name = positions if args.arch == "transformer" else args.arch
    bar = tqdm(total=train.steps, desc=f"{args.task}-{name}", file=sys.stderr, disable=quiet)
    history, done = [], None
    trained, shard = distribute(model, task, world)  # DDP and this rank's shard; as given for one process
    log_here = args.loss_log and world.is_main
    with open(args.loss_log, "w") if log_here else contextlib.nullcontext() as log:
        for event in main_rank_events(Trainer(trained, shard, train).run(), world):
            if isinstance(event, StepEvent):
                bar.update(1)
                bar.set_postfix(loss=f"{event.loss:.3f}", tok_s=f"{event.tokens_per_s:,.0f}")
                if log:
                    log.write(json.dumps(dataclasses.asdict(event)) + "\n")
            elif isinstance(event, EvalEvent):
                history.append({"step": event.step, **event.metrics})
                bar.write(f"step {event.step}: {json.dumps(event.metrics)}", file=sys.stderr)  # not stdout
            elif isinstance(event, DoneEvent):
                done = event
    bar.close()
    if not world.is_main:
        return
    metrics = dict(done.metrics)  # reversal: every REPORT_LENGTHS length, 200 strings each
    metrics["train_seconds"] = round(done.elapsed, 1)
    metrics["steps"] = done.step
    save_checkpoint(
        args.out,
        model,
        task.tokenizer,
        train_args={**train.to_dict(), "positions": positions, "arch": args.arch, **overrides},
        metrics=metrics,
        command=command,
    )
    _emit(
        args,
        {"out": str(args.out), "metrics": metrics, "history": history},
        f"saved {args.out}\n{json.dumps(metrics, indent=2)}",
    )


def cmd_heads(args: argparse.Namespace) -> None:

    ckpt = load_checkpoint(args.checkpoint, resolve_device(args.device))
    probes = [p for p in args.probe if p] or None
    report = analyze_heads(ckpt, probes)
    payload = heads_json(
        ckpt.name, report.heads, report.importance, report_composition(ckpt), report.induction_probe
    )
    columns = (
        ("previous_token", "prev", 6),
        ("diagonal", "diag", 6),
        ("first_token", "first", 6),
        ("duplicate_token", "dup", 6),
        ("induction", "induct", 7),
        ("anti_diagonal", "anti", 6),
        ("entropy", "H nats", 7),
        ("mean_distance", "dist", 6),
    )
    header = "".join(f"{label:>{w}}" for _, label, w in columns)
    lines = [f"{'head':<16}{header}{'d loss':>8}{'d exact':>8}"]

    def cell(x: float | None, width: int) -> str:
        return f"{'-':>{width}}" if x is None else f"{x:>{width}.2f}"

    for h in payload["heads"]:
        s, a = h["scores"], h["ablation"]
        lines.append(
            f"{h['kind'] + ' ' + str(h['layer']) + '.' + str(h['head']):<16}"
            + "".join(cell(s[k], w) for k, _, w in columns)
            + cell(a["delta_loss"], 8)
            + cell(a["delta_exact_match"], 8)
        )
    lines.append(f"d loss, d exact: each head ablated alone, measured on {payload['ablation_data']}")
    _emit(args, payload, "\n".join(lines))


def cmd_export(args: argparse.Namespace) -> None:

    ckpt = load_checkpoint(args.checkpoint, "cpu")
    out = export_transformer_lens(ckpt.model, args.out, name=ckpt.name, tokenizer=ckpt.tokenizer)
    files = sorted(p.name for p in out.iterdir() if p.is_file())
    _emit(
        args,
        {"checkpoint": ckpt.name, "format": args.format, "out": str(out), "files": files},
        f"wrote {', '.join(files)} to {out} (HookedTransformer names)",
    )


def cmd_patch(args: argparse.Namespace) -> None:
    ckpt = load_checkpoint(args.checkpoint, resolve_device(args.device))
    texts = (args.clean, args.corrupt, args.answer, args.wrong)
    result = activation_patching(ckpt.model, ckpt.tokenizer, *texts)
    _emit(args, patching_json(result), f"{ckpt.name}: " + patching_table(result))


def with_device(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--device", choices=DEVICE_CHOICES, default=default)


def trace_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("checkpoint", help="shipped name (e.g. gpt-rope, reverse-sinusoidal), run id or folder")
    sp.add_argument("text")
    sp.add_argument("--no-causal", action="store_true", help="switch the causal mask off")
    sp.add_argument("--no-padding-mask", action="store_true", help="let padded keys receive weight")
    sp.add_argument("--drop-positions", action="store_true", help="remove positional information")
    sp.add_argument(
        "--ablate",
        nargs="*",
        action="extend",
        default=[],
        metavar="L.H",
        help="zero heads: L.H (GPT self / seq2seq cross) or kind:L.H, kind in " + ", ".join(ATTENTION_KINDS),
    )
    sp.add_argument("--generate", type=int, default=None, metavar="N", help=GENERATE_HELP)
    sp.add_argument(
        "--beam",
        default=None,
        metavar="W",
        help="beam search of width W (1-8) instead of sampling (GPT: with --generate; reversal: alone)",
    )
    sp.add_argument("--seed", type=int, default=0, help="--generate's seed: same seed, same sample")
    sp.add_argument(
        "--window",
        type=int,
        default=None,
        metavar="W",
        help="sliding-window self-attention: each query sees only keys fewer than W positions away",
    )
    sp.add_argument(
        "--value-weighted",
        action="store_true",
        help='add "weighted": ||alpha_ij v_j W_O^h||, what each key sends (Kobayashi et al. 2020)',
    )
    with_device(sp, "cpu")


def eval_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("checkpoint")
    sp.add_argument("--lengths", default=",".join(map(str, REPORT_LENGTHS)))
    sp.add_argument("--samples", type=int, default=200)
    sp.add_argument("--seed", type=int, default=1234)
    sp.add_argument("--corpus", default=None, help="GPT: UTF-8 text file (default: bundled Python docs)")
    with_device(sp, "auto")


def train_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("--task", choices=list(TASKS), required=True)
    sp.add_argument(
        "--arch",
        choices=MODEL_KINDS,
        default="transformer",
        help="reverse: the Transformer, or the GRU encoder-decoder without (gru) or with Bahdanau attention",
    )
    sp.add_argument(
        "--positions",
        choices=list(POSITION_SCHEMES),
        default=None,
        help="default: sinusoidal; none for gru and bahdanau",
    )
    sp.add_argument("--steps", type=int, default=None, help="default: the task's preset")
    sp.add_argument("--batch-size", type=int, default=None, help="default: the task's preset")
    sp.add_argument("--lr", type=float, default=None, help="default: the task's preset")
    sp.add_argument("--schedule", choices=["cosine", "vaswani", "constant"], default="cosine")
    sp.add_argument("--warmup", type=int, default=200)
    sp.add_argument("--label-smoothing", type=float, default=0.0)
    sp.add_argument("--eval-every", type=int, default=1000)
    sp.add_argument("--block-size", type=int, default=128)
    sp.add_argument(
        "--random-positions",
        action="store_true",
        help="reversal: train on random increasing positions up to max_len (Ruoss et al. 2023)",
    )
    for shape in ("--d-model", "--d-ff", "--n-layers", "--n-heads"):
        sp.add_argument(shape, type=int, default=None)
    block = "the Transformer's block (default: the task's preset, pre / layernorm / gelu)"
    sp.add_argument(
        "--norm-position", choices=["pre", "post"], default=None, help=f"{block}: Pre-LN or Post-LN"
    )
    sp.add_argument("--norm", choices=["layernorm", "rmsnorm"], default=None, help=f"{block}: its norm")
    sp.add_argument("--activation", choices=["relu", "gelu", "swiglu"], default=None, help=f"{block}: FFN")
    sp.add_argument("--seed", type=int, default=0)
    with_device(sp, "auto")
    sp.add_argument("--corpus", default=None, help="UTF-8 text file (default: bundled Python docs)")
    sp.add_argument("--out", required=True, help="folder to write the checkpoint into")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    sp.add_argument("--loss-log", default=None, metavar="FILE", help="a JSON line per step (loss, tokens/s)")


def heads_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("checkpoint")
    sp.add_argument("--probe", nargs="*", action="extend", default=[], metavar="TEXT", help="probe texts")
    with_device(sp, "cpu")


def export_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("checkpoint")
    sp.add_argument("--format", choices=["transformer-lens"], required=True)
    sp.add_argument("--out", required=True, help="folder to write config.json and model.safetensors into")


def patch_arguments(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("checkpoint")
    sp.add_argument("--clean", required=True, help="the clean text")
    sp.add_argument("--corrupt", required=True, help="the corrupted text, as long as the clean one")
    sp.add_argument("--answer", metavar="C", help="metric logit[C] - logit[WRONG] instead of the loss")
    sp.add_argument("--wrong", metavar="C", help="the wrong character of the logit difference")
    with_device(sp, "cpu")


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, a line of help, its arguments and what it runs. `json`:
    whether it takes --json (then it prints exactly one JSON object on stdout)."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], None]
    description: str | None = None
    json: bool = True


COMMANDS: dict[str, Command] = {
    c.name: c
    for c in (
        Command("checkpoints", "list shipped checkpoints with their config and metrics", lambda sp: None,
                cmd_checkpoints),
        Command("trace", "every head's attention for one input, as [layer][head][query][key]",
                trace_arguments, cmd_trace, description=TRACE_JSON_HELP),
        Command("eval", "reversal: exact match and token accuracy per length; GPT: validation loss",
                eval_arguments, cmd_eval),
        Command("generate", "continue a prompt (GPT) or decode an input (reversal): sample, greedy or beam",
                generate_arguments, cmd_generate, description=GENERATE_DESCRIPTION),
        Command("train", "train a reversal (seq2seq) or character language model (GPT) and save it",
                train_arguments, cmd_train),
        Command("heads", "every head's detector scores (previous-token, induction, ...) and ablation effect",
                heads_arguments, cmd_heads),
        Command("export", "write a GPT checkpoint for TransformerLens's HookedTransformer (config + weights)",
                export_arguments, cmd_export),
        Command("import", IMPORT_HELP, import_arguments, cmd_import),
        Command("patch", "activation patching: each head's output from the clean run into the corrupted one",
                patch_arguments, cmd_patch, description=PATCH_HELP),
        Command("profile", "every head's scores over many held-out windows, and its top pairs (--write)",
                profile_arguments, cmd_profile, description=PROFILE_HELP),
        Command("explain", "why a head attends: its score split into the residual stream's parts, both sides",
                explain_arguments, cmd_explain, description=EXPLAIN_HELP),
    )
}  # fmt: skip


def installed_commands() -> dict[str, Command]:
    """The built-in commands and those of installed layers above the library (entry
    points), so `python -m transformer_core worker` works without the library importing them."""
    plugins = load_plugins(COMMANDS_GROUP)
    return {**COMMANDS, **{c.name: c for c in plugins if c.name not in COMMANDS}}


def build_parser(commands: dict[str, Command] | None = None) -> argparse.ArgumentParser:
    """The parser of every installed command (the built-in ones and the plugins')."""
    commands = installed_commands() if commands is None else commands
    p = argparse.ArgumentParser(
        prog="python -m transformer_core",
        description="Attention Lab's Transformer library: list, trace, evaluate, sample and train models.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for command in commands.values():
        sp = sub.add_parser(command.name, help=command.help, description=command.description or command.help)
        if command.json:
            sp.add_argument("--json", action="store_true", help="print one JSON object on stdout")
        command.arguments(sp)
    return p


def main(argv: list[str] | None = None) -> int:
    commands = installed_commands()
    args = build_parser(commands).parse_args(argv)
    try:
        commands[args.command].run(args)
    except (CheckpointError, ConfigError, InputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
