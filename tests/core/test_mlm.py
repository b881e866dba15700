"""The masked language model: BERT's masking, its bidirectional stack, filling blanks, the
`mlm` task from the command line, and the shipped bert-char against chance and a GPT."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.support.cli import cli
from tests.support.models import _tiny_config
from transformer_core import AttentionCapture, InferenceOptions
from transformer_core.config import ModelConfig
from transformer_core.errors import ConfigError
from transformer_core.interp.fill import (
    MASK_MARK,
    fill_masks,
    future_share,
    left_guesses,
    mark_masks,
    show_masks,
)
from transformer_core.io import load_checkpoint, load_corpus
from transformer_core.io.data import MASK_CHAR, mask_tokens, mlm_tokenizer
from transformer_core.models import BERT, GPT, build_model
from transformer_core.train import TASKS, train_config
from transformer_core.train.mlm import (
    MaskedLanguageModelTask,
    chance_accuracy,
    fill_accuracy,
    held_out_blanks,
)
from transformer_core.train.presets import prepare_run

TEXT = "def f(x):\n    return x + 1\n" * 40


def tiny(arch: str, positions: str = "sinusoidal", vocab: int = 20) -> ModelConfig:
    return _tiny_config(arch, positions, vocab_size=vocab, max_len=32)


@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "rope", "none"])
def test_bert_is_gpt_without_the_causal_mask(positions: str) -> None:
    torch.manual_seed(0)
    bert = BERT(tiny("bert", positions)).eval()
    gpt = GPT(tiny("gpt", positions)).eval()
    gpt.load_state_dict(bert.state_dict())
    ids = torch.randint(4, 20, (3, 9))
    assert torch.allclose(bert(ids), gpt(ids, options=InferenceOptions(causal=False)), atol=1e-6)
    assert not torch.allclose(bert(ids), gpt(ids), atol=1e-3)


@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "rope", "alibi", "t5", "none"])
def test_bert_attends_both_ways_and_its_paths_agree(positions: str) -> None:
    torch.manual_seed(1)
    bert = build_model(tiny("bert", positions)).eval()
    assert isinstance(bert, BERT)
    ids = torch.randint(4, 20, (2, 7))
    capture = AttentionCapture()
    explicit = bert(ids, capture=capture)
    assert torch.allclose(bert(ids), explicit, atol=1e-5)  # fused path == explicit path
    weights = capture.weights("self")  # (L, H, T, T) of the first row
    assert weights.shape == (2, 2, 7, 7)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 2, 7), atol=1e-5)
    ahead = future_share(weights.numpy())
    assert (ahead > 0.05).all()  # every head of an untrained BERT gives later keys weight
    with pytest.raises(ConfigError, match="no KV cache"):
        bert.new_cache()


def test_bert_masking_follows_the_paper() -> None:
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(4, 30, (400, 64), generator=generator)
    ordinary = torch.arange(4, 30)
    inputs, targets = mask_tokens(ids, 99, ordinary, generator, rate=0.15)
    chosen = targets != -100
    assert chosen.any(dim=1).all()  # at least one blank per row
    forced = (1 - 0.15) / 64  # the one blank a row gets when its draw chose none
    assert abs(chosen.float().mean().item() - (0.15 + forced)) < 0.005
    assert torch.equal(targets[chosen], ids[chosen])
    assert torch.equal(inputs[~chosen], ids[~chosen])
    masked = (inputs == 99)[chosen].float().mean().item()
    kept = (inputs == ids)[chosen].float().mean().item()  # 10% kept, plus random draws equal to the id
    assert abs(masked - 0.8) < 0.02
    assert abs(kept - (0.1 + 0.1 / 26)) < 0.02
    assert ((inputs != 99) & (inputs != ids))[chosen].float().mean().item() == pytest.approx(
        0.1 - 0.1 / 26, abs=0.02
    )


def test_the_vocabulary_ends_with_the_mask_and_the_loss_counts_blanks_only() -> None:
    tokenizer = mlm_tokenizer(TEXT + MASK_CHAR)  # a corpus's own mask character is not a second one
    assert tokenizer.vocab[-1] == MASK_CHAR and tokenizer.vocab.count(MASK_CHAR) == 1
    task = MaskedLanguageModelTask.from_text(TEXT, block_size=16)
    assert task.mask_id == len(tokenizer) - 1 == len(task.tokenizer) - 1
    torch.manual_seed(0)
    model = BERT(tiny("bert", vocab=len(task.tokenizer)))
    batch = task.batch(4, torch.Generator().manual_seed(0), torch.device("cpu"))
    loss, _ = task.loss(model, batch)
    logits = model(*batch.inputs)
    hidden = batch.targets != -100
    expected = F.cross_entropy(logits[hidden], batch.targets[hidden])
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)


def test_fill_masks_guesses_exactly_the_blanks() -> None:
    task = MaskedLanguageModelTask.from_text(TEXT, block_size=16)
    torch.manual_seed(0)
    model = BERT(tiny("bert", vocab=len(task.tokenizer))).eval()
    typed = f"ret{MASK_MARK.lower()}rn x + {MASK_MARK}"
    text = mark_masks(typed)
    assert (
        text == f"ret{MASK_CHAR}rn x + {MASK_CHAR}"
        and show_masks(text) == f"ret{MASK_MARK}rn x + {MASK_MARK}"
    )
    fill = fill_masks(model, task.tokenizer, text, top_k=4)
    assert [g.position for g in fill.guesses] == [3, 11]
    probs = torch.softmax(model(torch.tensor([task.tokenizer.encode(text)])), -1)[0]
    for g in fill.guesses:
        assert [p for _, p in g.candidates] == sorted((p for _, p in g.candidates), reverse=True)
        assert g.candidates[0][1] == pytest.approx(probs[g.position].max().item(), abs=1e-6)
        assert g.best == task.tokenizer.vocab[int(probs[g.position].argmax())]
    filled = list(text)
    filled[3], filled[11] = fill.guesses[0].best, fill.guesses[1].best
    assert fill.filled == fill.trace.output == "".join(filled)
    assert fill.trace.attention["self"].shape == (2, 2, len(text), len(text))


def test_a_gpt_guesses_from_the_left_only() -> None:
    task = MaskedLanguageModelTask.from_text(TEXT, block_size=16)
    torch.manual_seed(0)
    gpt = GPT(tiny("gpt", vocab=len(task.tokenizer))).eval()
    text = "return x + 1"
    guesses = left_guesses(gpt, task.tokenizer, text, [0, 4], top_k=3)
    assert guesses[0].candidates == []  # nothing on its left
    probs = torch.softmax(gpt(torch.tensor([task.tokenizer.encode(text[:4])])), -1)[0, -1]
    assert guesses[1].candidates[0][1] == pytest.approx(probs.max().item(), abs=1e-6)
    changed = left_guesses(gpt, task.tokenizer, text[:4] + "zzzzzzzz", [4], top_k=3)
    assert changed[0].candidates == guesses[1].candidates  # what lies right of the blank is never read


def test_held_out_accuracy_is_counted_at_the_blanks() -> None:
    task = MaskedLanguageModelTask.from_text(TEXT, block_size=16)
    blanks = held_out_blanks(task, batches=2, batch_size=4, window=12)
    assert all(inputs.shape == (4, 12) and (targets[:, 0] == -100).all() for inputs, targets in blanks)
    torch.manual_seed(0)
    gpt = GPT(tiny("gpt", vocab=len(task.tokenizer))).eval()
    right = total = 0
    for inputs, targets in blanks:
        original = torch.where(targets != -100, targets, inputs)
        guess = gpt(original).argmax(-1)
        for b, t in (targets != -100).nonzero().tolist():
            right += int(guess[b, t - 1] == original[b, t])
            total += 1
    assert fill_accuracy(task, gpt, task.tokenizer, blanks) == pytest.approx(right / total)
    space = task.tokenizer.stoi[" "]  # the text's most common character
    hidden = torch.cat([t[t != -100] for _, t in blanks])
    assert chance_accuracy(task, blanks) == pytest.approx((hidden == space).float().mean().item())


def test_the_mlm_task_trains_a_bert_through_the_registry() -> None:
    assert TASKS["mlm"].arch == "bert" and TASKS["mlm"].model_task == "mlm"
    train = train_config("mlm", steps=2, batch_size=4, block_size=16, device="cpu")
    model, task = prepare_run(train, "learned", text=TEXT, size="tiny")
    assert isinstance(model, BERT) and isinstance(task, MaskedLanguageModelTask)
    assert model.config.max_len == 16
    metrics = task.evaluate(model)
    assert 0 <= metrics["masked_accuracy"] <= 1 and metrics["chance_accuracy"] > 0.1
    with pytest.raises(ConfigError, match="gru"):
        prepare_run(train, "none", text=TEXT, size="tiny", model="gru")


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("ckpt") / "tiny-bert"
    cli("train", "--task", "mlm", "--positions", "rope", "--steps", "20", "--d-model", "32",
        "--n-layers", "1", "--block-size", "32", "--device", "cpu", "--quiet", "--out", str(out))  # fmt: skip
    return str(out)


def test_cli_trains_traces_and_evaluates_a_masked_lm(tiny_bert: str) -> None:
    meta = json.loads((Path(tiny_bert) / "checkpoint.json").read_text())
    assert meta["task"] == "mlm" and meta["config"]["arch"] == "bert" and meta["train_args"]["task"] == "mlm"
    traced = json.loads(cli("trace", tiny_bert, f"The ret{MASK_MARK}rn", "--json").stdout)
    assert [g["position"] for g in traced["guesses"]] == [7]
    assert traced["output"] == "The ret" + traced["guesses"][0]["candidates"][0][0] + "rn"
    assert len(traced["attention"]["self"]) == 1 and len(traced["attention"]["self"][0][0]) == 10
    evaluated = json.loads(cli("eval", tiny_bert, "--samples", "32", "--json").stdout)
    assert 0 <= evaluated["masked_accuracy"] <= 1 and evaluated["chance_accuracy"] > 0.1
    refused = cli("train", "--task", "mlm", "--arch", "gru", "--steps", "1", "--out", "/tmp/x", check=False)
    assert refused.returncode != 0 and "gru" in refused.stderr
    for command in (("generate", tiny_bert, "abc"), ("heads", tiny_bert), ("patch", tiny_bert, "--clean",
                    "abc", "--corrupt", "abd")):  # fmt: skip
        refused = cli(*command, check=False)
        assert refused.returncode != 0 and "masked language model" in refused.stderr
        assert "Traceback" not in refused.stderr


def test_bert_char_fills_blanks_far_better_than_chance() -> None:
    bert = load_checkpoint("bert-char")
    assert isinstance(bert.model, BERT) and bert.task == "mlm"
    task = MaskedLanguageModelTask.from_text(load_corpus())
    blanks = held_out_blanks(task)
    accuracy, chance = fill_accuracy(task, bert.model, bert.tokenizer, blanks), chance_accuracy(task, blanks)
    assert chance == pytest.approx(0.25, abs=0.02)
    assert accuracy > chance + 0.25
