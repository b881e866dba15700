"""The command line's decoding (generate / trace with --beam, seq2seq sampling) and the
recurrent model kinds (train --arch), run as a user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import cli


def run_json(*args: str) -> dict:
    return json.loads(cli(*args, "--json").stdout)


def assert_beam_tree(beam: dict, width: int) -> None:
    assert beam["width"] == width and beam["length_penalty"] == "((5 + length) / 6) ** alpha"
    assert beam["best"] == beam["final"][0]
    for step in beam["steps"]:
        assert len(step["kept"]) <= width and set(step) == {"step", "kept", "finished", "pruned"}
        for h in step["kept"] + step["finished"] + step["pruned"]:
            assert {"tokens", "text", "log_prob", "score", "finished", "parent"} == set(h)
            assert len(h["tokens"]) == step["step"] + 1 and h["log_prob"] <= 0


def test_generate_beam_on_a_gpt() -> None:
    payload = run_json("generate", "gpt-rope", "The ", "--beam", "4", "--max-new-tokens", "10")
    assert payload["decoding"] == "beam" and payload["prompt"] == "The "
    beam = payload["beam"]
    assert_beam_tree(beam, 4)
    assert len(beam["steps"]) == 10 and len(beam["best"]["tokens"]) == 10
    assert payload["text"] == beam["best"]["text"] == "".join(beam["best"]["tokens"])
    greedy = run_json("generate", "gpt-rope", "The ", "--beam", "1", "--max-new-tokens", "10")
    sampled = run_json("generate", "gpt-rope", "The ", "--temperature", "0", "--max-new-tokens", "10")
    assert greedy["text"] == sampled["text"] and sampled["decoding"] == "greedy"


def test_generate_decodes_a_reversal_models_input() -> None:
    greedy = run_json("generate", "reverse-rope", "hello")
    assert greedy["text"] == "olleh" and greedy["decoding"] == "greedy"
    assert [t["token"] for t in greedy["tokens"]] == ["o", "l", "l", "e", "h", "<eos>"]
    beam = run_json("generate", "reverse-rope", "hello", "--beam", "3")
    assert beam["text"] == "olleh" and beam["beam"]["best"]["finished"]
    assert_beam_tree(beam["beam"], 3)
    sampled = run_json("generate", "reverse-rope", "hello", "--temperature", "1.0", "--seed", "2")
    assert sampled["decoding"] == "sample" and len(sampled["tokens"]) >= 1
    assert cli("generate", "reverse-rope", "hello", "--beam", "2").stdout.strip() == "hello -> olleh"


@pytest.mark.parametrize("width", ["0", "9", "abc"])
def test_bad_beam_widths_get_a_clear_message(width: str) -> None:
    for args in (
        ("generate", "gpt-rope", "x", "--beam", width),
        ("trace", "reverse-rope", "x", "--beam", width),
    ):
        result = cli(*args, check=False)
        assert result.returncode == 2 and result.stdout == ""
        shown = width if width.isdigit() else repr(width)  # digits are read as a number, then refused
        assert f"beam width: {shown} is not a whole number from 1 to 8" in result.stderr
        assert "Traceback" not in result.stderr


def test_trace_generate_with_beam_traces_the_winner() -> None:
    payload = run_json("trace", "gpt-rope", "def f", "--generate", "8", "--beam", "3")
    assert payload["generated"] == payload["beam"]["best"]["text"] and payload["generated_from"] == 5
    assert payload["input"] == "def f" + payload["generated"]
    assert len(payload["attention"]["self"][0][0]) == 13  # 5 prompt + 8 written
    assert_beam_tree(payload["beam"], 3)
    result = cli("trace", "gpt-rope", "def f", "--beam", "3", check=False)
    assert result.returncode == 2 and "--generate" in result.stderr


def test_trace_a_reversal_models_beam_output() -> None:
    payload = run_json("trace", "reverse-alibi", "attention", "--beam", "4")
    assert payload["output"] == "noitnetta" and payload["tokens"]["target"][0] == "<sos>"
    assert set(payload["attention"]) == {"encoder_self", "decoder_self", "cross"}
    assert_beam_tree(payload["beam"], 4)


@pytest.fixture(scope="module", params=["gru", "bahdanau"])
def tiny_recurrent(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ckpt") / f"tiny-{request.param}"
    train = ("train", "--task", "reverse", "--arch", request.param, "--steps", "10", "--d-model", "16")
    cli(*train, "--eval-every", "0", "--device", "cpu", "--out", str(out), "--quiet")
    return out


def test_train_arch_writes_a_recurrent_checkpoint_the_commands_use(tiny_recurrent: Path) -> None:
    meta = json.loads((tiny_recurrent / "checkpoint.json").read_text())
    kind = meta["config"]["model"]
    assert kind in ("gru", "bahdanau") and meta["train_args"]["arch"] == kind
    assert meta["config"]["positions"] == "none" and meta["config"]["n_heads"] == 1
    assert f"--arch {kind}" in meta["command"]
    trace = run_json("trace", str(tiny_recurrent), "hello")
    if kind == "gru":
        assert trace["attention"] == {} and len(trace["context"]) == 16
        assert "no attention" in cli("trace", str(tiny_recurrent), "hello").stdout
    else:
        cross = trace["attention"]["cross"]
        assert (
            len(cross) == 1 and len(cross[0]) == 1 and len(cross[0][0][0]) == 6
        )  # 1 layer, 1 head, h e l l o <eos>
    evaluated = run_json("eval", str(tiny_recurrent), "--lengths", "3,5", "--samples", "10")
    assert set(evaluated["exact_match"]) == {"3", "5"}
    beam = run_json("generate", str(tiny_recurrent), "abc", "--beam", "2", "--max-new-tokens", "6")
    assert_beam_tree(beam["beam"], 2)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--task", "lm", "--arch", "gru"), "arch: 'gru' is not one of"),
        (
            ("--task", "reverse", "--arch", "bahdanau", "--positions", "rope"),
            "positions: a 'bahdanau' model needs",
        ),
    ],
)
def test_recurrent_kinds_refuse_what_they_cannot_be(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    result = cli("train", *args, "--steps", "1", "--out", str(tmp_path / "never"), check=False)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
