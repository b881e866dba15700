"""Checkpoints: exact round trip, no pickle, clear errors for every kind of bad file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from transformer_core.errors import CheckpointError
from transformer_core.io.checkpoint import (
    META_FILE,
    WEIGHTS_FILE,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
    shipped_checkpoint_path,
)
from transformer_core.io.data import reversal_tokenizer
from transformer_core.models import build_model


@pytest.fixture
def saved(tmp_path: Path, tiny_config) -> tuple[Path, torch.nn.Module]:
    tok = reversal_tokenizer()
    torch.manual_seed(0)
    model = build_model(tiny_config("seq2seq", "rope", vocab_size=len(tok))).eval()
    folder = save_checkpoint(
        tmp_path / "my-model",
        model,
        tok,
        train_args={"steps": 1},
        metrics={"x": 1.0},
        command="python -m transformer_core train ...",
    )
    return folder, model


def test_round_trip_gives_identical_logits(saved) -> None:
    folder, model = saved
    ckpt = load_checkpoint(folder)
    src = torch.tensor([[5, 6, 7, 2]])
    tgt = torch.tensor([[1, 7, 6]])
    assert torch.equal(ckpt.model(src, tgt), model(src, tgt))
    assert ckpt.tokenizer.vocab == reversal_tokenizer().vocab
    assert ckpt.metrics == {"x": 1.0} and ckpt.task == "reverse"
    assert not ckpt.model.training
    meta = json.loads((folder / META_FILE).read_text())
    assert meta["versions"]["torch"] == torch.__version__ and len(meta["weights_sha256"]) == 64


def test_tied_gpt_round_trip(tmp_path: Path, tiny_config) -> None:
    tok = reversal_tokenizer()
    model = build_model(tiny_config("gpt", "learned", vocab_size=len(tok), tie_weights=True)).eval()
    ckpt = load_checkpoint(save_checkpoint(tmp_path / "g", model, tok))
    x = torch.tensor([[4, 5, 6, 7]])
    assert torch.equal(ckpt.model(x), model(x))
    assert ckpt.model.lm_head.weight.data_ptr() == ckpt.model.tok_emb.weight.data_ptr()


def test_truncated_weights_are_rejected(saved) -> None:
    folder, _ = saved
    weights = folder / WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="checksum|corrupt"):
        load_checkpoint(folder)


def test_corrupt_weights_without_checksum_are_rejected(saved) -> None:
    folder, _ = saved
    meta = json.loads((folder / META_FILE).read_text())
    del meta["weights_sha256"]
    (folder / META_FILE).write_text(json.dumps(meta))
    (folder / WEIGHTS_FILE).write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(folder)


def test_pickle_file_is_never_loaded(saved, tmp_path: Path) -> None:
    folder, model = saved
    torch.save(model.state_dict(), folder / WEIGHTS_FILE)  # a pickle where safetensors belongs
    meta = json.loads((folder / META_FILE).read_text())
    del meta["weights_sha256"]
    (folder / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(folder)


def test_mismatched_config_is_rejected(saved) -> None:
    folder, _ = saved
    meta = json.loads((folder / META_FILE).read_text())
    meta["config"]["d_model"] = 32
    meta["config"]["d_ff"] = 64
    (folder / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="do not match the config"):
        load_checkpoint(folder)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda m: m.update(format="other"), "not an Attention Lab checkpoint"),
        (lambda m: m["config"].update(positions="spiral"), "positions"),
        (lambda m: m.update(vocab=m["vocab"][:-1]), "vocabulary has"),
    ],
)
def test_bad_metadata_is_named(saved, mutate, message: str) -> None:
    folder, _ = saved
    meta = json.loads((folder / META_FILE).read_text())
    mutate(meta)
    (folder / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(folder)


def test_invalid_json_and_missing_files(saved) -> None:
    folder, _ = saved
    (folder / META_FILE).write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_checkpoint(folder)
    (folder / META_FILE).unlink()
    with pytest.raises(CheckpointError, match="missing"):
        load_checkpoint(folder)


def test_names_cannot_escape_the_checkpoints_folder(saved) -> None:
    folder, _ = saved
    for name in ("../transformer_core", "..", "nope-not-here", "reverse-rope/../../etc", str(folder)):
        with pytest.raises(CheckpointError, match="unknown checkpoint"):
            shipped_checkpoint_path(name)
    assert shipped_checkpoint_path("my-model", folder.parent) == folder
    with pytest.raises(CheckpointError, match="missing"):  # a path that is no checkpoint
        load_checkpoint("transformer_core")


def test_unknown_name_lists_the_available_ones() -> None:
    with pytest.raises(CheckpointError, match="unknown checkpoint 'gpt-spiral'"):
        resolve_checkpoint("gpt-spiral")


def test_loading_does_not_change_files(saved, tmp_path: Path) -> None:
    folder, _ = saved
    copy = shutil.copytree(folder, tmp_path / "copy")
    before = {p.name: p.read_bytes() for p in copy.iterdir()}
    load_checkpoint(copy)
    assert {p.name: p.read_bytes() for p in copy.iterdir()} == before


def test_every_loaded_checkpoint_has_a_weights_checksum_and_a_label(saved) -> None:
    folder, _ = saved
    meta = json.loads((folder / META_FILE).read_text())
    assert meta["label"] == "my-model"
    recorded = meta.pop("weights_sha256")
    (folder / META_FILE).write_text(json.dumps(meta))  # an older checkpoint without one
    assert load_checkpoint(folder).meta["weights_sha256"] == recorded
