"""Characters or pieces (/basics section 8): a word split by the lab's character tokenizer and
by a byte-level BPE, with ids, and the BPE's merges replayed one at a time.

GPT-2's own BPE ranks are not shipped with the lab; the BPE here is trained the same way
(byte-level, GPT-2's pre-tokenizer) with `tokenizers` on the lab's own corpus, Python's bundled
documentation, and shipped as data/corpus_bpe.json (a page loads it in a millisecond instead of
training for a fifth of a second). `write_corpus_bpe()` trains it again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from transformer_core.io import Tokenizer as CharTokenizer
from transformer_core.io.data import default_corpus
from transformer_core.io.tokenizers import byte_symbols

BPE_VOCAB = 1024  # 256 bytes + 768 merges: small enough to read, large enough for common words
MAX_TEXT = 40
BPE_FILE = Path(__file__).parent / "data" / "corpus_bpe.json"


def corpus_bpe() -> Tokenizer:
    """The shipped byte-level BPE of the lab's corpus."""
    return Tokenizer.from_str(BPE_FILE.read_text(encoding="utf-8"))


def write_corpus_bpe() -> Path:
    """Train the corpus BPE again (on this Python's bundled documentation) and ship it."""
    BPE_FILE.write_text(train_corpus_bpe().to_str(), encoding="utf-8")
    return BPE_FILE


def train_corpus_bpe(vocab_size: int = BPE_VOCAB) -> Tokenizer:
    """A byte-level BPE trained on the lab's corpus (deterministic for one Python version)."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    bpe.train_from_iterator([default_corpus()], trainer)
    return bpe


def merges_of(bpe: Tokenizer) -> list[tuple[str, str]]:
    """The BPE's merges in rank order (the first learned is applied first)."""
    return [tuple(m) for m in json.loads(bpe.to_str())["model"]["merges"]]  # type: ignore[misc]


def replay_merges(symbols: list[str], merges: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """BPE on one pre-token, step by step: while two neighbours form a learned merge, join the
    pair of lowest rank (every occurrence, left to right). Returns (merge, symbols after it)."""
    rank = {pair: i for i, pair in enumerate(merges)}
    steps = []
    while True:
        pairs = [(rank[p], p) for p in zip(symbols, symbols[1:], strict=False) if p in rank]
        if not pairs:
            return steps
        _, (a, b) = min(pairs)
        joined, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == (a, b):
                joined.append(a + b)
                i += 2
            else:
                joined.append(symbols[i])
                i += 1
        symbols = joined
        steps.append((f"{a} + {b}", symbols))


@dataclass(frozen=True)
class Split:
    """One text, tokenized two ways."""

    chars: list[tuple[str, int]]  # (character label, id) of the character tokenizer
    pieces: list[tuple[str, int, str]]  # (piece as the BPE writes it, id, its UTF-8 bytes in hex)
    steps: list[tuple[str, str, list[str]]]  # (pre-token, merge, its symbols after the merge)


def split(text: str, chars: CharTokenizer, bpe: Tokenizer) -> Split:
    """`text` (at most MAX_TEXT characters) through both tokenizers."""
    ids = chars.encode(text)
    encoded = bpe.encode(text)
    merges = merges_of(bpe)
    steps = []
    for word, _ in bpe.pre_tokenizer.pre_tokenize_str(text):
        steps += [(word, merge, symbols) for merge, symbols in replay_merges(list(word), merges)]
    byte_of = byte_symbols()  # the printable character BPE writes for each byte -> the byte
    pieces = [
        (piece, i, " ".join(f"{byte_of[c]:02x}" for c in piece))
        for piece, i in zip(encoded.tokens, encoded.ids, strict=True)
    ]
    return Split(list(zip(chars.token_labels(ids), ids, strict=True)), pieces, steps)
