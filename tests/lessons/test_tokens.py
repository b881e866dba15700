"""/basics section 8: the corpus BPE, its merges replayed one at a time, and a word split by
characters and by pieces."""

from __future__ import annotations

import pytest

from attention_lab.lessons import tokens
from transformer_core.io import load_checkpoint
from transformer_core.io.data import default_corpus


@pytest.fixture(scope="module")
def bpe():
    return tokens.corpus_bpe()


def test_the_replayed_merges_give_the_tokenizers_own_pieces(bpe) -> None:
    """Our step-by-step BPE equals `tokenizers`' encoding on 5,000 corpus words and odd inputs."""
    merges = tokens.merges_of(bpe)
    assert len(merges) == tokens.BPE_VOCAB - 256 and bpe.get_vocab_size() == tokens.BPE_VOCAB
    words = default_corpus().split()[:5000] + ["unhappiness", "über naïve café 😀", "  spaces  ", "a\x00b"]
    for word in words:
        replayed = []
        for pre, _ in bpe.pre_tokenizer.pre_tokenize_str(word):
            steps = tokens.replay_merges(list(pre), merges)
            replayed += steps[-1][1] if steps else list(pre)
        assert replayed == bpe.encode(word).tokens, word


def test_a_word_split_both_ways(bpe) -> None:
    chars = load_checkpoint("gpt-sinusoidal").tokenizer
    split = tokens.split("unhappiness", chars, bpe)
    assert [c for c, _ in split.chars] == list("unhappiness")
    assert [i for _, i in split.chars] == chars.encode("unhappiness")
    assert "".join(p for p, _, _ in split.pieces) == "unhappiness" and 1 < len(split.pieces) < 11
    assert [i for _, i, _ in split.pieces] == bpe.encode("unhappiness").ids
    assert split.steps[-1][2] == [p for p, _, _ in split.pieces]
    emoji = tokens.split("😀", chars, bpe)
    assert emoji.chars == [("<unk>", 3)]  # the GPTs never saw it: one unknown character
    assert " ".join(b for _, _, b in emoji.pieces) == "f0 9f 98 80"  # BPE still reads its four bytes


def test_training_the_corpus_bpe_again_gives_a_bpe_of_the_same_size() -> None:
    """The shipped file is what `write_corpus_bpe` writes: a fresh training on this Python's corpus
    has the same vocabulary size and merge count, and its pieces rebuild their words."""
    fresh = tokens.train_corpus_bpe()
    assert (
        fresh.get_vocab_size() == tokens.BPE_VOCAB and len(tokens.merges_of(fresh)) == tokens.BPE_VOCAB - 256
    )
    for word in ("unhappiness", "the statement", "über"):
        assert fresh.decode(fresh.encode(word).ids) == word
