"""The character tokenizer and the two tasks' data helpers."""

from __future__ import annotations

import pytest
import torch

from transformer_core.errors import InputError
from transformer_core.io.data import (
    corpus_from_bytes,
    corpus_tokenizer,
    default_corpus,
    encode_source,
    lm_batch,
    load_corpus,
    random_strings,
    reversal_batch,
    reversal_tokenizer,
    split_ids,
)
from transformer_core.io.tokenizer import (
    EOS_ID,
    PAD_ID,
    SOS_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    CharTokenizer,
)

# ------------------------------------------------------------------ tokenizer


def test_special_ids_come_first():
    assert (PAD_ID, SOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    tok = CharTokenizer("ba")
    assert tok.vocab[:4] == list(SPECIAL_TOKENS)
    assert tok.encode("ab") == [5, 4]  # order of first appearance after the specials
    assert len(tok) == 6
    assert tok.chars == "ba"


def test_roundtrip_and_duplicates():
    tok = CharTokenizer("hello world")
    assert len(tok) == 4 + len(set("hello world"))
    text = "low herd"
    assert tok.decode(tok.encode(text)) == text
    ids = [SOS_ID, *tok.encode("hello"), EOS_ID, PAD_ID]
    assert tok.decode(ids) == "hello"
    assert tok.decode(ids, skip_special=False) == "<sos>hello<eos><pad>"


def test_from_vocab_roundtrip():
    tok = CharTokenizer("xyz\n")
    again = CharTokenizer.from_vocab(tok.vocab)
    assert again.vocab == tok.vocab
    with pytest.raises(ValueError):
        CharTokenizer.from_vocab(["a", "b", "c", "d", "e"])


def test_encode_checked_rejects_empty_input():
    tok = CharTokenizer("abc")
    with pytest.raises(InputError, match="empty"):
        tok.encode_checked("")


def test_encode_checked_rejects_overlong_input_naming_the_limit():
    tok = CharTokenizer("abc")
    with pytest.raises(InputError) as err:
        tok.encode_checked("abcabcabca", max_chars=7)
    assert "7" in str(err.value) and "10" in str(err.value)
    # the boundary: exactly the limit is fine, one more is not
    assert tok.encode_checked("abcabca", max_chars=7).ids == tok.encode("abcabca")
    with pytest.raises(InputError, match="7"):
        tok.encode_checked("abcabcab", max_chars=7)


def test_unknown_characters_become_unk_and_are_reported():
    tok = CharTokenizer("abc ")
    encoded = tok.encode_checked("a😀bÉ c")
    assert encoded.ids == [4, UNK_ID, 5, UNK_ID, 7, 6]
    assert encoded.unknown == [(1, "😀"), (3, "É")]
    assert encoded.unknown_chars == sorted(["😀", "É"])
    assert tok.encode("É") == [UNK_ID]
    clean = tok.encode_checked("cab")
    assert clean.unknown == [] and clean.ids == [6, 4, 5]


def test_token_labels_are_readable():
    tok = CharTokenizer("a \n\t")
    ids = [SOS_ID, *tok.encode("a \n\t"), EOS_ID]
    assert tok.token_labels(ids) == ["<sos>", "a", "␣", "⏎", "⇥", "<eos>"]


def test_multi_character_entries_are_refused():
    with pytest.raises(ValueError):
        CharTokenizer(["a", "bc"])


# ------------------------------------------------------------------ reversal task


def test_reversal_batch_contents_and_padding():
    tok = reversal_tokenizer()
    batch = reversal_batch(tok, ["abc", "hello", "z"])
    assert batch.src.shape == (3, 6)  # longest text + EOS
    assert batch.tgt_in.shape == batch.tgt_out.shape == (3, 6)
    assert batch.src.dtype == torch.long
    for row, text in enumerate(["abc", "hello", "z"]):
        n = len(text)
        assert batch.src[row, :n].tolist() == tok.encode(text)
        assert batch.src[row, n].item() == EOS_ID
        assert torch.all(batch.src[row, n + 1 :] == PAD_ID)
        reversed_ids = tok.encode(text[::-1])
        assert batch.tgt_in[row, : n + 1].tolist() == [SOS_ID, *reversed_ids]
        assert batch.tgt_out[row, : n + 1].tolist() == [*reversed_ids, EOS_ID]
        assert torch.all(batch.tgt_in[row, n + 1 :] == PAD_ID)
        assert torch.all(batch.tgt_out[row, n + 1 :] == PAD_ID)
    # teacher forcing: the input is the output shifted right by one
    shifted = batch.tgt_in[:, 1:]
    real = shifted != PAD_ID
    assert torch.equal(shifted[real], batch.tgt_out[:, :-1][real])
    assert tok.decode(batch.tgt_out[1].tolist()) == "olleh"


def test_encode_source_matches_batch_source():
    tok = reversal_tokenizer()
    texts = ["ab", "abcd"]
    assert torch.equal(encode_source(tok, texts), reversal_batch(tok, texts).src)


def test_random_strings_lengths_alphabet_and_seed():
    g = torch.Generator().manual_seed(0)
    strings = random_strings(200, 3, 7, g, alphabet="xyz")
    assert len(strings) == 200
    assert all(3 <= len(s) <= 7 for s in strings)
    assert {len(s) for s in strings} == set(range(3, 8))
    assert set("".join(strings)) == set("xyz")
    again = random_strings(200, 3, 7, torch.Generator().manual_seed(0), alphabet="xyz")
    assert strings == again


# ------------------------------------------------------------------ language-model corpus


def test_default_corpus_is_nonempty_text():
    text = default_corpus()
    assert isinstance(text, str)
    assert len(text) > 10_000
    assert "def" in text  # Python's own documentation topics
    assert load_corpus() == text


GOOD_TEXT = ("To be, or not to be, that is the question. " * 5).encode("utf-8")


def test_corpus_from_bytes_accepts_utf8_and_strips_bom():
    assert corpus_from_bytes(GOOD_TEXT) == GOOD_TEXT.decode()
    assert corpus_from_bytes(b"\xef\xbb\xbf" + GOOD_TEXT) == GOOD_TEXT.decode()
    accented = ("Élan vital — café " * 10).encode("utf-8")
    assert corpus_from_bytes(accented).startswith("Élan")


def test_corpus_from_bytes_rejects_binary():
    with pytest.raises(InputError, match="binary"):
        corpus_from_bytes(GOOD_TEXT + b"\x00\x01\x02", name="photo.png")


def test_corpus_from_bytes_rejects_non_utf8():
    latin1 = ("Élan vital, café au lait. " * 10).encode("latin-1")
    with pytest.raises(InputError, match="UTF-8") as err:
        corpus_from_bytes(latin1, name="old.txt")
    assert "old.txt" in str(err.value)


@pytest.mark.parametrize("raw", [b"", b"   \n\n\t  ", b"too short"])
def test_corpus_from_bytes_rejects_empty(raw):
    with pytest.raises(InputError):
        corpus_from_bytes(raw)


def test_corpus_from_bytes_rejects_oversized():
    with pytest.raises(InputError, match="limit"):
        corpus_from_bytes(GOOD_TEXT, max_bytes=10)


def test_load_corpus_from_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_bytes(GOOD_TEXT)
    assert load_corpus(path) == GOOD_TEXT.decode()
    with pytest.raises(InputError, match="not found"):
        load_corpus(tmp_path / "missing.txt")
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\x00" * 200)
    with pytest.raises(InputError, match="x.bin"):
        load_corpus(binary)


def test_corpus_tokenizer_counts_and_sorts():
    # b 2, a 4, n 2; space, r, e, d once each
    assert corpus_tokenizer("banana bread", min_count=2).chars == "abn"
    assert corpus_tokenizer("banana bread").chars == " abdenr"
    assert corpus_tokenizer("banana bread", max_vocab=2).chars == "ab"


def test_split_ids_is_contiguous():
    ids = torch.arange(100)
    train, val = split_ids(ids, 0.1)
    assert len(train) == 90 and len(val) == 10
    assert torch.equal(torch.cat([train, val]), ids)
    assert val[0].item() == 90


def test_lm_batch_targets_are_inputs_shifted_by_one():
    ids = torch.arange(50) * 3  # distinct values reveal the positions
    g = torch.Generator().manual_seed(0)
    x, y = lm_batch(ids, block_size=8, batch_size=32, generator=g)
    assert x.shape == y.shape == (32, 8)
    assert torch.equal(x[:, 1:], y[:, :-1])
    starts = x[:, 0] // 3
    for row, start in enumerate(starts.tolist()):
        assert torch.equal(x[row], ids[start : start + 8])
        assert torch.equal(y[row], ids[start + 1 : start + 9])


def test_lm_batch_can_use_every_window():
    # ids of length block + 1 hold exactly one (x, y) window
    ids = torch.arange(9)
    x, y = lm_batch(ids, block_size=8, batch_size=3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, ids[:8].expand(3, 8))
    assert torch.equal(y, ids[1:].expand(3, 8))
    # and in a longer text the last character is sometimes a target
    ids = torch.arange(20)
    _, y = lm_batch(ids, block_size=8, batch_size=400, generator=torch.Generator().manual_seed(1))
    assert int(y.max()) == 19
