"""Importing models trained elsewhere: a random GPT2LMHeadModel (Hugging Face) and the same
weights in nanoGPT's layout give our logits and every head's attention within 1e-5 (float32);
TransformerLens exports come back equal; unsafe or inexact sources are refused by name.

transformers (requirements-import.txt) builds the reference models; the session fixture
installs it with pip when it is missing, so these tests always run.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.support.gpt2 import CHARS, random_gpt2, train_bpe, write_nanogpt, zero_biases
from tests.support.optional import installed
from transformer_core.capture import AttentionCapture
from transformer_core.cli import main
from transformer_core.config import ModelConfig
from transformer_core.errors import CheckpointError, InputError
from transformer_core.generation import generate
from transformer_core.interp.profiles import PROFILES_FILE, TOP_PAIRS, stored_profiles
from transformer_core.io.checkpoint import load_checkpoint, save_checkpoint
from transformer_core.io.data import default_corpus
from transformer_core.io.held_out import imported_windows
from transformer_core.io.importers import import_model
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.models import GPT

REPO = Path(__file__).resolve().parents[2]
TEXT = "hello world, the sea\nis deep"
TOL = 1e-5


@pytest.fixture(scope="session")
def transformers(tmp_path_factory):
    """The transformers module, pip-installed from requirements-import.txt if missing."""
    return installed("transformers", "requirements-import.txt", tmp_path_factory)


@pytest.fixture(scope="module")
def hf_source(transformers, tmp_path_factory):
    """(folder, model): a random GPT-2 (gelu_new) saved with save_pretrained beside a BPE tokenizer.json."""
    folder = tmp_path_factory.mktemp("hf") / "tiny-gpt2"
    _, vocab_size = train_bpe(folder)
    model = random_gpt2(transformers, vocab_size)
    model.save_pretrained(folder)
    return folder, model


@pytest.fixture(scope="module")
def hf_ckpt(hf_source, tmp_path_factory):
    out = tmp_path_factory.mktemp("imported") / "tiny-gpt2"
    import_model(hf_source[0], "hf", out)
    return load_checkpoint(out)


def assert_same_outputs(reference, ckpt, text: str = TEXT) -> None:
    """Logits (fused path and captured path) and every head's attention within TOL."""
    ids = torch.tensor([ckpt.tokenizer.encode(text)])
    with torch.no_grad():
        ref = reference(ids, output_attentions=True)
        capture = AttentionCapture()
        captured = ckpt.model(ids, capture=capture)
        fused = ckpt.model(ids)
    assert ids.size(1) >= 8
    assert (ref.logits - fused).abs().max() < TOL
    assert (ref.logits - captured).abs().max() < TOL
    ref_attention = torch.stack([a[0] for a in ref.attentions])  # (L, H, T, T)
    ours = capture.weights("self")
    assert ours.shape == ref_attention.shape == (2, 4, ids.size(1), ids.size(1))
    assert (ref_attention - ours).abs().max() < TOL


def test_hf_gpt2_logits_and_attention_equal_transformers(hf_source, hf_ckpt):
    _, model = hf_source
    cfg = hf_ckpt.config
    assert (cfg.activation, cfg.scale_embedding, cfg.tie_weights, cfg.positions) == (
        "gelu_tanh",
        False,
        True,
        "learned",
    )
    assert (cfg.max_len, cfg.d_ff) == (64, 128)
    assert hf_ckpt.tokenizer.kind == "bpe" and hf_ckpt.meta["tokenizer"]["file"] == "tokenizer.json"
    assert_same_outputs(model, hf_ckpt)


def test_hf_sharded_weights_import_equal(hf_source, tmp_path, transformers):
    folder, model = hf_source
    model.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
    (tmp_path / "sharded" / "tokenizer.json").write_bytes((folder / "tokenizer.json").read_bytes())
    assert (tmp_path / "sharded" / "model.safetensors.index.json").is_file()
    assert len(list((tmp_path / "sharded").glob("model-*.safetensors"))) > 1
    import_model(tmp_path / "sharded", "hf", tmp_path / "out")
    assert_same_outputs(model, load_checkpoint(tmp_path / "out"))


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_nanogpt_char_run_equals_gpt2_with_exact_gelu(transformers, tmp_path, bias):
    reference = random_gpt2(transformers, len(CHARS), activation="gelu")
    if not bias:
        zero_biases(reference)
    write_nanogpt(tmp_path / "out-shakespeare-char", reference, bias=bias)
    result = import_model(tmp_path / "out-shakespeare-char", "nanogpt", tmp_path / "imported")
    ckpt = load_checkpoint(tmp_path / "imported")
    assert ckpt.config.activation == "gelu" and result.imported.source["bias"] is bias
    assert ckpt.tokenizer.kind == "chars" and ckpt.tokenizer.vocab == CHARS  # ids 1:1, no specials
    assert ckpt.tokenizer.encode("\n ") == [CHARS.index("\n"), CHARS.index(" ")]
    assert_same_outputs(reference, ckpt)


def test_nanogpt_finds_meta_in_its_data_folder_and_refuses_unknown_characters(transformers, tmp_path):
    reference = random_gpt2(transformers, len(CHARS), activation="gelu")
    write_nanogpt(tmp_path / "out", reference)
    data = tmp_path / "data" / "shakespeare_char"  # nanoGPT's layout: the ckpt's config names the dataset
    data.mkdir(parents=True)
    (tmp_path / "out" / "meta.pkl").rename(data / "meta.pkl")
    import_model(tmp_path / "out" / "ckpt.pt", "nanogpt", tmp_path / "imported")
    ckpt = load_checkpoint(tmp_path / "imported")
    assert ckpt.meta["source"]["vocabulary"] == str(data / "meta.pkl")
    with pytest.raises(InputError, match=r"no <unk>.*\['Z', '€'\]"):
        ckpt.tokenizer.encode_checked("hello Z€")


def test_nanogpt_bpe_run_needs_a_tokenizer_and_uses_it(transformers, hf_source, tmp_path):
    folder, model = hf_source
    write_nanogpt(tmp_path / "out", model, meta=False)
    with pytest.raises(CheckpointError, match="no meta.pkl.*--tokenizer"):
        import_model(tmp_path / "out", "nanogpt", tmp_path / "a")
    import_model(tmp_path / "out", "nanogpt", tmp_path / "b", tokenizer=folder / "tokenizer.json")
    ckpt = load_checkpoint(tmp_path / "b")
    assert ckpt.tokenizer.kind == "bpe" and ckpt.config.activation == "gelu"  # nanoGPT: exact GELU
    ids = torch.tensor([ckpt.tokenizer.encode(TEXT)])
    gelu_model = random_gpt2(transformers, model.config.vocab_size, activation="gelu")
    gelu_model.load_state_dict(model.state_dict())
    with torch.no_grad():
        assert (gelu_model(ids).logits - ckpt.model(ids)).abs().max() < TOL


class _Evil:
    """Unpickling this would call os.system: the meta.pkl attack."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_crafted_meta_pkl_is_refused_without_running_anything(transformers, tmp_path):
    write_nanogpt(tmp_path / "out", random_gpt2(transformers, len(CHARS), activation="gelu"))
    marker = tmp_path / "pwned"
    (tmp_path / "out" / "meta.pkl").write_bytes(pickle.dumps({"itos": _Evil(marker)}))
    with pytest.raises(CheckpointError, match=r"meta.pkl: refuses (posix|os)\.system"):
        import_model(tmp_path / "out", "nanogpt", tmp_path / "imported")
    assert not marker.exists() and not (tmp_path / "imported").exists()


def test_crafted_ckpt_pt_is_refused_by_weights_only_loading(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "out").mkdir()
    with open(tmp_path / "out" / "ckpt.pt", "wb") as f:
        pickle.dump({"model": _Evil(marker)}, f, protocol=2)
    with pytest.raises(CheckpointError, match="safe loading refuses"):
        import_model(tmp_path / "out", "nanogpt", tmp_path / "imported")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"activation_function": "gelu_fast"}, "activation_function 'gelu_fast'"),
        ({"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx=True"),
        ({"reorder_and_upcast_attn": True}, "reorder_and_upcast_attn=True"),
        ({"add_cross_attention": True}, "add_cross_attention=True"),
        ({"layer_norm_epsilon": 1e-6}, "layer_norm_epsilon=1e-06"),
        ({"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"]}, "'gpt_neox'.*rotary"),
    ],
)
def test_architectures_we_cannot_run_exactly_are_refused_by_name(hf_source, tmp_path, change, named):
    folder, _ = hf_source
    copy = tmp_path / "src"
    copy.mkdir()
    for name in ("model.safetensors", "tokenizer.json"):
        (copy / name).write_bytes((folder / name).read_bytes())
    config = json.loads((folder / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(CheckpointError, match=named):
        import_model(copy, "hf", tmp_path / "out")


def test_a_model_over_the_parameter_bound_is_refused(hf_source, hf_ckpt, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_MAX_PARAMS", "10000")
    with pytest.raises(CheckpointError, match=r"37,120 parameters; the limit here is 10,000"):
        import_model(hf_source[0], "hf", tmp_path / "out")
    with pytest.raises(CheckpointError, match=r"37,120 parameters; the limit here is 10,000"):
        load_checkpoint(hf_ckpt.folder)
    monkeypatch.setenv("ATTENTION_LAB_MAX_PARAMS", "37120")
    assert load_checkpoint(hf_ckpt.folder).meta["parameters"] == 37_120


def test_bpe_labels_and_multi_character_tokens_through_trace_json(hf_ckpt, capsys):
    assert main(["trace", str(hf_ckpt.folder), TEXT, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    tokens = payload["tokens"]["source"]
    assert tokens == hf_ckpt.tokenizer.token_labels(hf_ckpt.tokenizer.encode(TEXT))
    assert "␣world" in tokens and "↵" in tokens and len(tokens) < len(TEXT)
    assert "".join(tokens).replace("␣", " ").replace("↵", "\n") == TEXT
    attention = payload["attention"]["self"]
    assert len(attention) == 2 and len(attention[0]) == 4 and len(attention[0][0]) == len(tokens)


def test_input_length_is_bounded_by_the_context_in_tokens(hf_ckpt):
    with pytest.raises(InputError, match="the input has 65 tokens; the limit is 64"):
        hf_ckpt.tokenizer.encode_checked("!" * 65, max_chars=hf_ckpt.config.max_len)
    assert len(hf_ckpt.tokenizer.encode_checked("hello " * 10, max_chars=64).ids) <= 64


def test_generation_follows_the_models_own_vocabulary(transformers, hf_source, hf_ckpt, tmp_path):
    tok = hf_ckpt.tokenizer
    assert tok.stop_id == tok.eos_id == 0 and tok.never_sampled == ()  # <|endoftext|>, nothing banned
    prompt = tok.encode("hello world")
    steps = generate(hf_ckpt.model, prompt, 12, temperature=0, never_sampled=(), stop_id=None)
    ids = list(prompt)
    with torch.no_grad():  # the reference's own greedy choice over every id, 0-3 included
        for _ in range(12):
            ids.append(int(hf_source[1](torch.tensor([ids])).logits[0, -1].argmax()))
    assert [s.token for s in steps] == ids[len(prompt) :]
    first = steps[0].token
    stopped = generate(hf_ckpt.model, prompt, 12, temperature=0, never_sampled=(), stop_id=first)
    assert [s.token for s in stopped] == [first]  # the stop id is written, then nothing


def test_cli_import_json_and_generate_with_an_imported_model(hf_source, tmp_path):
    out = tmp_path / "my-gpt2"
    result = subprocess.run(
        [sys.executable, "-m", "transformer_core", "import", str(hf_source[0]), "--from", "hf"]
        + ["--out", str(out), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["name"] == "my-gpt2" and payload["out"] == str(out) and payload["from"] == "hf"
    assert payload["source"] == str(hf_source[0]) and payload["tokenizer"] == "bpe"
    assert (payload["parameters"], payload["vocab_size"]) == (37_120, 300)
    names = ["checkpoint.json", "model.safetensors", "profiles.json", "tokenizer.json"]
    assert sorted(p.name for p in out.iterdir()) == names
    assert payload["profiles"] == str(out / PROFILES_FILE) and "default corpus" in payload["profiles_read"]
    profiles = stored_profiles(load_checkpoint(out))  # what /heads 11 reads, for these weights
    assert profiles is not None and profiles.scores["previous_token"].shape == (64, 2, 4)
    assert profiles.top.shape == (2, 4, TOP_PAIRS, 4)


def test_an_imported_model_reads_the_default_corpus_as_far_as_its_vocabulary_writes_it(
    transformers, hf_ckpt, tmp_path
):
    corpus = default_corpus()
    held = imported_windows(hf_ckpt, 8, 32)
    assert held is not None and len(held.sequences) == 8 and {len(s) for s in held.sequences} == {33}
    assert sum(hf_ckpt.tokenizer.decode(list(s)) in corpus for s in held.sequences) >= 6  # bytes may split
    assert "default corpus" in held.description and "left out" not in held.description
    reference = random_gpt2(transformers, len(CHARS), activation="gelu")
    write_nanogpt(tmp_path / "out", reference)
    import_model(tmp_path / "out", "nanogpt", tmp_path / "imported")
    chars = load_checkpoint(tmp_path / "imported")
    held = imported_windows(chars, 8, 32)
    assert held is not None and "left out" in held.description  # its vocabulary lacks most of it
    assert all(set(chars.tokenizer.decode(list(s))) <= set(CHARS) for s in held.sequences)
    assert imported_windows(load_checkpoint("gpt-rope")) is None  # the lab's own: read on its own data


def test_cli_import_refuses_a_non_empty_out_folder(hf_source, tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    args = ["import", str(hf_source[0]), "--from", "hf", "--out", str(tmp_path / "taken")]
    assert main(args) == 2
    assert "already exists and is not an empty folder" in capsys.readouterr().err


def _char_gpt(positions: str, **overrides) -> tuple[GPT, CharTokenizer]:
    torch.manual_seed(0)
    tok = CharTokenizer("abcdefghij ")
    config = ModelConfig(vocab_size=len(tok), d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=20)
    model = GPT(ModelConfig(**{**config.to_dict(), "positions": positions, **overrides})).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model, tok


@pytest.mark.parametrize("positions", ["learned", "sinusoidal", "rope", "alibi", "none"])
@pytest.mark.parametrize("overrides", [{}, {"norm": "rmsnorm", "activation": "relu"}], ids=["ln", "rms"])
def test_transformer_lens_export_imports_back_equal(tmp_path, positions, overrides):
    model, tok = _char_gpt(positions, **overrides)
    save_checkpoint(tmp_path / "ours", model, tok)
    assert (
        main(
            ["export", str(tmp_path / "ours"), "--format", "transformer-lens", "--out", str(tmp_path / "tl")]
        )
        == 0
    )
    import_model(tmp_path / "tl", "transformer-lens", tmp_path / "back")
    back = load_checkpoint(tmp_path / "back")
    same = ("positions", "norm", "activation", "tie_weights", "scale_embedding", "max_len", "n_heads")
    assert {k: getattr(back.config, k) for k in same} == {k: getattr(model.config, k) for k in same}
    assert back.tokenizer.kind == "char" and back.tokenizer.vocab == tok.vocab
    theirs = back.model.state_dict()
    assert all(torch.equal(v, theirs[k]) for k, v in model.state_dict().items())
    ids = torch.tensor([tok.encode("abc defghij")])
    with torch.no_grad():
        assert torch.equal(model(ids), back.model(ids))


def test_imported_gpt2_round_trips_through_transformer_lens(hf_ckpt, tmp_path):
    assert (
        main(["export", str(hf_ckpt.folder), "--format", "transformer-lens", "--out", str(tmp_path / "tl")])
        == 0
    )
    exported = json.loads((tmp_path / "tl" / "config.json").read_text())
    assert exported["act_fn"] == "gelu_new" and (tmp_path / "tl" / "tokenizer.json").is_file()
    import_model(tmp_path / "tl", "transformer-lens", tmp_path / "back")
    back = load_checkpoint(tmp_path / "back")
    assert (back.config.scale_embedding, back.config.activation, back.tokenizer.kind) == (
        False,
        "gelu_tanh",
        "bpe",
    )
    ids = torch.tensor([hf_ckpt.tokenizer.encode(TEXT)])
    with torch.no_grad():
        assert torch.equal(hf_ckpt.model(ids), back.model(ids))


def test_old_configs_and_checkpoints_load_as_before():
    assert ModelConfig.from_dict({"vocab_size": 20}).scale_embedding is True
    ckpt = load_checkpoint("gpt-rope")
    assert "tokenizer" not in ckpt.meta and ckpt.tokenizer.kind == "char"
    assert ckpt.config.scale_embedding is True and ckpt.tokenizer.never_sampled == (0, 1, 2, 3)


def test_heads_and_patching_run_on_an_imported_bpe_model(hf_ckpt, capsys):
    tok = hf_ckpt.tokenizer
    clean, corrupt = "hello world", "hello the"
    assert len(tok.encode(clean)) == len(tok.encode(corrupt)) == 3 and tok.token_id("␣the") is not None
    assert main(["heads", str(hf_ckpt.folder), "--json"]) == 0
    heads = json.loads(capsys.readouterr().out)["heads"]
    assert [(h["layer"], h["head"]) for h in heads] == [(l, h) for l in range(2) for h in range(4)]
    assert all(0.0 <= h["scores"]["previous_token"] <= 1.0 for h in heads)
    args = ["patch", str(hf_ckpt.folder), "--clean", clean, "--corrupt", corrupt, "--json"]
    assert main([*args, "--answer", "␣the", "--wrong", "␣world"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metric"] != "loss" and len(result["heads"]) == 2 and len(result["heads"][0]) == 4
    ids = torch.tensor([tok.encode(clean)])
    with torch.no_grad():
        logits = hf_ckpt.model(ids)[0, -1]
    expected = float(logits[tok.token_id("␣the")] - logits[tok.token_id("␣world")])
    assert result["clean"] == pytest.approx(expected, abs=1e-5)


def test_an_imported_gpt2_exports_to_hooked_transformer_with_equal_logits(
    hf_source, hf_ckpt, tmp_path_factory
):
    installed("transformer_lens", "requirements-interop.txt", tmp_path_factory)
    from transformer_core.io.export_tl import export_transformer_lens, load_hooked_transformer

    out = export_transformer_lens(hf_ckpt.model, tmp_path_factory.mktemp("tl"), tokenizer=hf_ckpt.tokenizer)
    hooked = load_hooked_transformer(out)
    ids = torch.tensor([hf_ckpt.tokenizer.encode(TEXT)])
    with torch.no_grad():
        assert (hooked(ids) - hf_source[1](ids).logits).abs().max() < 1e-4


def test_trace_generate_traces_a_bpe_sample_as_sampled(hf_ckpt, capsys):
    from transformer_core.interp.generated import trace_generated

    prompt = "hello world"
    prompt_ids = hf_ckpt.tokenizer.encode(prompt)
    trace, window, steps = trace_generated(hf_ckpt.model, hf_ckpt.tokenizer, prompt, 70, seed=1)
    full = [*prompt_ids, *(s.token for s in steps)]
    assert len(prompt_ids) == 3 and len(full) == 73 and window.dropped == 9  # past the 64-token context
    assert trace.ids == full[9:] and trace.tokens == hf_ckpt.tokenizer.token_labels(full[9:])
    assert window.generated_from == 0 and window.first_sample == 6
    assert main(["trace", str(hf_ckpt.folder), prompt, "--generate", "5", "--seed", "2", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert (
        payload["generated_from"] == len(prompt_ids)
        and len(payload["tokens"]["source"]) == len(prompt_ids) + 5
    )


def test_nanogpt_padded_bpe_vocabulary_never_samples_the_padding(transformers, hf_source, tmp_path):
    """nanoGPT pads GPT-2's 50257 tokens to 50304 rows: the extra ids exist, have no text, and
    are never written."""
    folder, _ = hf_source
    write_nanogpt(tmp_path / "out", random_gpt2(transformers, 304, activation="gelu"), meta=False)
    import_model(tmp_path / "out", "nanogpt", tmp_path / "b", tokenizer=folder / "tokenizer.json")
    ckpt = load_checkpoint(tmp_path / "b")
    tok = ckpt.tokenizer
    assert (len(tok), ckpt.config.vocab_size, tok.never_sampled) == (304, 304, (300, 301, 302, 303))
    assert tok.token_labels([301]) == ["<unused:301>"] and tok.decode([5, 301]) == tok.decode([5])
    with torch.no_grad():  # make the padding the likeliest next token: still never sampled
        ckpt.model.tok_emb.weight[300:] = ckpt.model.tok_emb.weight[300:] * 0 + 10.0
    steps = generate(
        ckpt.model, tok.encode("hello"), 10, temperature=1.0, seed=0, never_sampled=tok.never_sampled
    )
    assert len(steps) == 10 and all(s.token < 300 for s in steps)


def test_eval_on_an_imported_bpe_model_reports_nats_per_token(hf_ckpt, tmp_path, capsys):
    """`eval` reads the corpus through the model's own BPE: its loss is per token and says so
    (it said nats/char), with perplexity exp(loss)."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world, the heads attend to the world. " * 40)
    assert main(["eval", str(hf_ckpt.folder), "--corpus", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "nats/token" in out and "nats/char" not in out
    assert main(["eval", str(hf_ckpt.folder), "--corpus", str(corpus), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["perplexity"] == pytest.approx(math.exp(result["val_loss"]), rel=1e-4)
    assert 0 < result["val_loss"] < 20
