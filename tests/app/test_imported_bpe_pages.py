"""An imported byte-level BPE GPT (GPT-2's layout, written with torch alone and imported with
`import --from hf`) in the lab's pages through AppTest: /gpt traces prompt + sample as the
tokens that were sampled (labels ␣the, byte pieces ⟨E2⟩), counts positions in tokens and
says "token"; /heads runs on it; an input too long in tokens, or with characters a nanoGPT
character vocabulary lacks, is a clear message."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attention_lab.explorers.model_input import check_input, token_unit
from attention_lab.models.explorer_compute import sample
from tests.app.figures import charts, heatmaps
from tests.support.gpt2 import write_hf_gpt2
from transformer_core.config import InferenceOptions
from transformer_core.interp.trace import trace_gpt_ids
from transformer_core.io import PlainCharTokenizer
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.importers import import_model

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "the heads attend to the world"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    import_model(write_hf_gpt2(tmp_path_factory.mktemp("hf")), "hf", folder / "tiny-bpe")
    return folder


@pytest.fixture
def env(models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATTENTION_LAB_MODELS_DIR", str(models))
    monkeypatch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path / "runs"))
    return models


def open_page(page: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=120)
    at.run()
    at.switch_page(page)
    at.query_params = params
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_gpt_traces_the_sampled_tokens_as_sampled(env: Path) -> None:
    at = open_page(
        "views/gpt.py", {"checkpoint": "tiny-bpe", "text": PROMPT, "max_new": "12", "sampled": "true"}
    )
    ckpt = load_checkpoint(env / "tiny-bpe")
    tok = ckpt.tokenizer
    prompt_ids = tok.encode(PROMPT)
    assert token_unit(tok) == "token" and len(prompt_ids) < len(PROMPT)  # BPE: fewer tokens than characters
    head = charts(at)["gpt_self_head"]
    keys = head["x"]
    assert keys[: len(prompt_ids)] == tok.token_labels(prompt_ids)  # the prompt's own tokens, e.g. ␣the
    assert "␣the" in keys
    samples = sample(ckpt, PROMPT, 12, 0.8, 0, 1.0, 0, InferenceOptions())  # the page's defaults
    ids = prompt_ids + [s.token for s in samples]
    assert keys == tok.token_labels(ids)  # every sampled token one position, as sampled
    assert len(keys) == len(prompt_ids) + 12
    captions = " ".join(c.value for c in at.caption)
    assert "Tracing the prompt and the 12 sampled tokens" in captions
    assert (
        f"imported from **Hugging Face** (gpt2) · byte-level BPE, {len(tok):,} tokens · positions" in captions
    )
    assert f"sampled queries are rows {len(prompt_ids)} and below" in captions
    assert at.get("button_group")[0].label == "Click a sampled token to explain it"
    assert at.selectbox(key="gpt_query").label == "Query token"  # section 3 says what a position is
    tr = trace_gpt_ids(ckpt.model, tok, ids, "", [])  # the map is the model's attention on those ids
    layer, h = charts(at)["gpt_self_grid"]["selected"]  # the head drawn large
    np.testing.assert_allclose(heatmaps(head)[0], tr.attention["self"][layer, h], atol=1e-6)


def test_a_bpe_model_samples_8_tokens_by_default_and_a_chosen_length_stays(env: Path) -> None:
    at = open_page("views/gpt.py", {"checkpoint": "tiny-bpe", "text": PROMPT})
    length = at.slider(key="gpt_max_new")
    assert (length.label, length.value) == ("New tokens", 8)  # GPT-2 small: a page run under 1 s
    at.selectbox(key="gpt_checkpoint").set_value("gpt-learned").run()
    assert (at.slider(key="gpt_max_new").label, at.slider(key="gpt_max_new").value) == ("New characters", 80)
    at.slider(key="gpt_max_new").set_value(33).run()
    at.selectbox(key="gpt_checkpoint").set_value("tiny-bpe").run()
    assert not at.exception and at.slider(key="gpt_max_new").value == 33  # a person's choice stays
    at.slider(key="gpt_max_new").set_value(80).run()  # 80 tokens on purpose: kept, not taken for a default
    at.text_area(key="gpt_text").set_value("the world").run()
    assert at.slider(key="gpt_max_new").value == 80


def test_heads_runs_on_a_bpe_model_and_asks_for_tokens(env: Path) -> None:
    at = open_page("views/heads.py", {"checkpoint": "tiny-bpe"})
    labels = [t.label for t in at.text_input]
    assert "Corrupted text (same number of tokens)" in labels
    assert "Answer token" in labels and "Wrong token" in labels
    # section 11: an import's heads across windows of the default corpus (its makers' data is not here)
    assert any("11 · Every head across a dataset" in h.value for h in at.subheader)
    read = [c.value for c in at.caption if c.value.startswith("Read on the first 64 tokens")]
    assert read and "default corpus" in read[0] and "imported model" in read[0], read


def test_input_is_bounded_in_tokens_and_unknown_characters_are_named(env: Path) -> None:
    tok = load_checkpoint(env / "tiny-bpe").tokenizer
    long_text = "the world " * 40  # 400 characters, more tokens than the 64-token context
    n = len(tok.encode(long_text))
    checked = check_input(long_text, tok, 64)
    assert checked.problem == f"The input is {n} tokens long; this model takes at most 64. Shorten it."
    assert check_input("the world", tok, 64).problem is None  # 9 characters: fine
    chars = PlainCharTokenizer(list("abc "))  # nanoGPT's characters: no <unk>
    problem = check_input("abd", chars, 64).problem
    assert problem is not None and "'d'" in problem and problem[0].isupper()
    assert check_input("abc", chars, 64).problem is None


def test_byte_pieces_and_control_characters_have_readable_labels(env: Path) -> None:
    tok = load_checkpoint(env / "tiny-bpe").tokenizer
    labels = tok.token_labels(tok.encode("é\x01 the\n"))
    assert labels == ["⟨C3⟩", "⟨A9⟩", "␁", "␣the", "↵"]
    assert len(set(tok.token_labels(list(range(len(tok)))))) == len(tok)  # every token tells itself apart
    assert np.all([isinstance(label, str) and label for label in tok.token_labels([0, 1, 2])])


def test_compare_runs_a_bpe_model_against_itself_without_positions(env: Path) -> None:
    """/compare on one imported BPE model, B without positions: token labels on both maps,
    the answer in tokens, and B's head map the model's own attention on the prompt's ids."""
    at = open_page("views/compare.py", {"a": "tiny-bpe", "b_nopos": "true", "text": PROMPT})
    ckpt = load_checkpoint(env / "tiny-bpe")
    ids = ckpt.tokenizer.encode(PROMPT)
    answers = [m.value for m in at.markdown if "likeliest" in m.value]
    assert [a.split(":")[0] for a in answers] == [
        "**A**'s likeliest next tokens",
        "**B**'s likeliest next tokens",
    ]
    figs = charts(at)
    assert figs["cmp_a_head"]["x"] == figs["cmp_b_head"]["x"] == ckpt.tokenizer.token_labels(ids)
    layer, head = figs["cmp_a_grid"]["selected"]
    no_positions = trace_gpt_ids(
        ckpt.model, ckpt.tokenizer, ids, PROMPT, [], InferenceOptions(positions=False)
    )
    b = heatmaps(figs["cmp_b_head"])[0]
    np.testing.assert_allclose(b, no_positions.attention["self"][layer, head], atol=1e-6)
    assert np.abs(b - heatmaps(figs["cmp_a_head"])[0]).max() > 1e-3  # positions matter to this model
