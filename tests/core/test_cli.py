"""The command line, run as a user would: subprocesses, JSON on stdout, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.cli import cli
from transformer_core.cli import build_parser, parse_ablation
from transformer_core.io.checkpoint import SHIPPED_NAMES


@pytest.fixture(scope="module")
def tiny_reverse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("ckpt") / "tiny-reverse"
    result = cli(
        "train",
        "--task",
        "reverse",
        "--positions",
        "alibi",
        "--steps",
        "30",
        "--d-model",
        "16",
        "--n-layers",
        "1",
        "--n-heads",
        "2",
        "--device",
        "cpu",
        "--out",
        str(out),
        "--json",
        "--quiet",
    )
    return out, json.loads(result.stdout)


def test_help_lists_every_command() -> None:
    out = cli("--help").stdout
    for command in ("checkpoints", "trace", "eval", "generate", "train"):
        assert command in out
    assert "--ablate" in cli("trace", "--help").stdout


def test_checkpoints_json_lists_all_shipped_models() -> None:
    payload = json.loads(cli("checkpoints", "--json").stdout)
    names = [c["name"] for c in payload["checkpoints"]]
    assert names[: len(SHIPPED_NAMES)] == list(SHIPPED_NAMES)
    for item in payload["checkpoints"]:
        assert {"name", "task", "config", "parameters", "metrics", "command"} <= set(item)
        assert item["command"].startswith("python -m transformer_core train")


def test_train_writes_a_loadable_checkpoint(tiny_reverse) -> None:
    out, payload = tiny_reverse
    assert (out / "model.safetensors").is_file() and (out / "checkpoint.json").is_file()
    assert set(payload["metrics"]["exact_match"]) == {"3", "5", "7", "10", "12", "15"}
    meta = json.loads((out / "checkpoint.json").read_text())
    assert meta["command"].startswith("python -m transformer_core train --task reverse")
    assert meta["train_args"]["positions"] == "alibi" and meta["config"]["d_model"] == 16


def test_trace_seq2seq_json_shape(tiny_reverse) -> None:
    out, _ = tiny_reverse
    payload = json.loads(cli("trace", str(out), "abc", "--json").stdout)
    assert set(payload) >= {"checkpoint", "input", "output", "tokens", "attention"}
    src, tgt = payload["tokens"]["source"], payload["tokens"]["target"]
    assert src == ["a", "b", "c", "<eos>"] and tgt[0] == "<sos>"
    enc, dec, cross = (payload["attention"][k] for k in ("encoder_self", "decoder_self", "cross"))
    assert (len(enc), len(enc[0]), len(enc[0][0]), len(enc[0][0][0])) == (1, 2, 4, 4)
    assert (len(dec[0][0]), len(dec[0][0][0])) == (len(tgt), len(tgt))
    assert (len(cross[0][0]), len(cross[0][0][0])) == (len(tgt), 4)
    assert abs(sum(cross[0][1][0]) - 1.0) < 1e-4


def test_trace_no_causal_puts_weight_on_future(tiny_reverse) -> None:
    out, _ = tiny_reverse
    causal = json.loads(cli("trace", str(out), "abcd", "--json").stdout)["attention"]["decoder_self"]
    free = json.loads(cli("trace", str(out), "abcd", "--no-causal", "--json").stdout)["attention"][
        "decoder_self"
    ]
    assert causal[0][0][0][1] == 0.0
    assert free[0][0][0][1] > 0.0


def test_eval_json_shape(tiny_reverse) -> None:
    out, _ = tiny_reverse
    payload = json.loads(cli("eval", str(out), "--lengths", "3,5", "--samples", "20", "--json").stdout)
    assert set(payload["exact_match"]) == {"3", "5"} and set(payload["token_accuracy"]) == {"3", "5"}
    assert all(0.0 <= v <= 1.0 for v in payload["token_accuracy"].values())


def test_gpt_commands(tmp_path: Path) -> None:
    out = tmp_path / "tiny-gpt"
    cli(
        "train",
        "--task",
        "lm",
        "--positions",
        "rope",
        "--steps",
        "5",
        "--d-model",
        "16",
        "--n-layers",
        "1",
        "--n-heads",
        "2",
        "--block-size",
        "32",
        "--device",
        "cpu",
        "--out",
        str(out),
        "--quiet",
    )
    gen = json.loads(
        cli("generate", str(out), "The ", "--max-new-tokens", "12", "--seed", "3", "--json").stdout
    )
    assert len(gen["tokens"]) == 12 and gen["text"] == "".join(t["token"] for t in gen["tokens"])
    assert all(0 <= t["prob"] <= 1 and len(t["top"]) == 5 for t in gen["tokens"])
    again = json.loads(
        cli("generate", str(out), "The ", "--max-new-tokens", "12", "--seed", "3", "--json").stdout
    )
    assert again["text"] == gen["text"]
    trace = json.loads(cli("trace", str(out), "def f", "--ablate", "0.1", "--json").stdout)
    assert trace["tokens"] == {"source": ["d", "e", "f", "␣", "f"]}
    assert len(trace["attention"]["self"][0]) == 2 and len(trace["attention"]["self"][0][0]) == 5
    ev = json.loads(cli("eval", str(out), "--samples", "32", "--json").stdout)
    assert (
        ev["val_loss"] > 0 and abs(ev["perplexity"] - 2.718281828 ** ev["val_loss"]) < 1e-6 * ev["perplexity"]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("trace", "gpt-spiral", "x"), "unknown checkpoint 'gpt-spiral'"),
        (("eval", "reverse-nope", "--json"), "unknown checkpoint"),
        (("train", "--task", "reverse", "--steps", "0", "--out", "/tmp/never"), "steps"),
    ],
)
def test_errors_are_clear_with_nonzero_exit(args: tuple[str, ...], message: str) -> None:
    result = cli(*args, check=False)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_bad_flag_value_exits_nonzero() -> None:
    result = cli("train", "--task", "reverse", "--positions", "spiral", "--out", "x", check=False)
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_bad_ablation_and_empty_input(tiny_reverse) -> None:
    out, _ = tiny_reverse
    result = cli("trace", str(out), "abc", "--ablate", "cross:5.0", check=False)
    assert result.returncode == 2 and "ablate" in result.stderr
    result = cli("trace", str(out), "", check=False)
    assert result.returncode == 2 and "empty" in result.stderr


def test_trace_generate_traces_the_prompt_and_its_sample() -> None:
    """Issue 24: `trace --generate N` samples N characters (seeded) and traces prompt + sample."""

    def traced(seed: str) -> dict:
        args = ("trace", "gpt-rope", "def f(x):", "--generate", "20", "--seed", seed, "--json")
        return json.loads(cli(*args).stdout)

    first, again, other = traced("3"), traced("3"), traced("4")
    assert first == again  # same seed, same sample, same weights
    assert first["generated_from"] == 9 and len(first["generated"]) == 20
    assert first["input"] == "def f(x):" + first["generated"]
    assert len(first["tokens"]["source"]) == 29
    weights = np.array(first["attention"]["self"])
    assert weights.shape == (4, 4, 29, 29)
    assert np.allclose(np.triu(weights, 1), 0) and np.allclose(weights.sum(-1), 1, atol=1e-4)
    assert other["generated"] != first["generated"] and other["generated_from"] == 9


def test_trace_generate_keeps_the_last_block_and_refuses_a_reversal_model(tiny_reverse) -> None:
    long = json.loads(cli("trace", "gpt-rope", "x" * 120, "--generate", "20", "--json").stdout)
    assert len(long["tokens"]["source"]) == 128 and long["dropped_characters"] == 12
    assert long["generated_from"] == 108 and long["input"].endswith(long["generated"])
    out, _ = tiny_reverse
    result = cli("trace", str(out), "abc", "--generate", "5", check=False)
    assert result.returncode == 2 and "reversal model" in result.stderr and "--generate" in result.stderr
    assert "Traceback" not in result.stderr


def test_repeated_ablate_flags_accumulate() -> None:
    """`--ablate 0.0 --ablate 1.1` means the same as `--ablate 0.0 1.1` (DESIGN.md)."""
    repeated = build_parser().parse_args(["trace", "gpt-rope", "x", "--ablate", "0.0", "--ablate", "1.1"])
    together = build_parser().parse_args(["trace", "gpt-rope", "x", "--ablate", "0.0", "1.1"])
    assert repeated.ablate == together.ablate == ["0.0", "1.1"]
    assert parse_ablation(repeated.ablate, "gpt") == frozenset({("self", 0, 0), ("self", 1, 1)})


def test_a_plugin_that_cannot_load_is_skipped_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stale install's entry point must not break the whole command line."""
    from importlib.metadata import EntryPoint

    from transformer_core import plugins

    group = plugins.COMMANDS_GROUP
    broken = EntryPoint(name="gone", value="no_such_module_here:COMMAND", group=group)
    working = EntryPoint(name="json", value="json:dumps", group=group)
    monkeypatch.setattr(plugins, "entry_points", lambda group: [broken, working])
    with pytest.warns(UserWarning, match="gone = no_such_module_here:COMMAND could not be loaded"):
        loaded = plugins.load_plugins(group)
    assert loaded == [json.dumps]


def test_trace_window_keeps_a_band_and_a_wide_window_changes_nothing() -> None:
    """`trace --window W`: every self-attention weight more than W - 1 positions back is 0 and
    each row still sums to 1; W >= T is the plain causal trace."""
    text = "attention is"
    banded = json.loads(cli("trace", "gpt-sinusoidal", text, "--window", "3", "--json").stdout)["attention"][
        "self"
    ]
    plain = json.loads(cli("trace", "gpt-sinusoidal", text, "--json").stdout)["attention"]["self"]
    wide = json.loads(cli("trace", "gpt-sinusoidal", text, "--window", "64", "--json").stdout)["attention"][
        "self"
    ]
    w = np.array(banded)  # (L, H, T, T)
    i, j = np.indices(w.shape[-2:])
    assert np.all(w[..., i - j >= 3] == 0) and np.all(w[..., j > i] == 0)
    assert np.allclose(w.sum(-1), 1.0, atol=1e-5)
    assert not np.allclose(w, np.array(plain))
    assert np.allclose(np.array(wide), np.array(plain), atol=1e-6)
    assert (
        "sliding_window: must be >= 1"
        in cli("trace", "gpt-sinusoidal", "abc", "--window", "0", check=False).stderr
    )
