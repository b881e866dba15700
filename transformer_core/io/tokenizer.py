"""Tokenizers: the protocol every kind follows, and the character tokenizer of the models
trained here (four special tokens PAD, SOS, EOS and UNK first).

Why a protocol: imported models bring their own vocabularies (nanoGPT's characters, GPT-2's
byte-level BPE, see `tokenizers.py`) whose ids must map 1:1 onto their embedding rows, so no
caller may assume that ids 0-3 are special or that a token is one character.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from transformer_core.errors import InputError
from transformer_core.vocab import EOS_ID, PAD_ID, SOS_ID, SPECIAL_TOKENS, UNK_ID

__all__ = [
    "CharTokenizer",
    "Encoded",
    "EOS_ID",
    "PAD_ID",
    "SOS_ID",
    "SPECIAL_TOKENS",
    "Tokenizer",
    "UNK_ID",
    "LABEL_CHARS",
    "char_label",
]

CHAR_LABELS = {" ": "␣", "\n": "⏎", "\t": "⇥"}
LABEL_CHARS = {label: c for c, label in CHAR_LABELS.items()}


def char_label(s: str) -> str:
    """A character's label on a plot axis: space, newline and tab made visible."""
    return CHAR_LABELS.get(s, s)


@dataclass(frozen=True)
class Encoded:
    """Token ids of a text and the characters that were replaced by UNK, as (index, char)."""

    ids: list[int]
    unknown: list[tuple[int, str]]

    @property
    def unknown_chars(self) -> list[str]:
        return sorted({c for _, c in self.unknown})


class Tokenizer(Protocol):
    """What callers use of a tokenizer, whatever its kind.

    vocab[i] is the text of token i (len(vocab) == the model's vocab_size); never_sampled are
    ids generation must not write; stop_id is the id after which generation stops (None:
    it never stops early); pad_id is None where the vocabulary has no padding token."""

    kind: str
    vocab: list[str]
    eos_id: int | None
    pad_id: int | None
    stop_id: int | None
    never_sampled: tuple[int, ...]

    def __len__(self) -> int: ...

    @property
    def ordinary_ids(self) -> list[int]:
        """Ids of every token that is text (not a special token): what random probes draw from."""
        ...

    def encode(self, text: str) -> list[int]: ...

    def encode_checked(self, text: str, *, max_chars: int | None = None) -> Encoded:
        """Ids for text; InputError when empty or longer than max_chars tokens."""
        ...

    def decode(self, ids: list[int], *, skip_special: bool = True) -> str: ...

    def token_labels(self, ids: list[int]) -> list[str]: ...

    def keep_known(self, text: str) -> str:
        """text without the characters this tokenizer cannot encode (probe texts)."""
        ...

    def token_id(self, piece: str) -> int | None:
        """The id of a text that is exactly one token (its label form accepted), else None."""
        ...

    def to_meta(self, folder: Path) -> dict[str, Any]:
        """checkpoint.json's "tokenizer" entry; writes any file it names into folder."""
        ...


class CharVocabulary:
    """What every one-character-per-token vocabulary does alike (vocab: id -> character,
    stoi: character -> id): labels, probe cleaning, single-token look-up, its checkpoint entry."""

    kind: str
    vocab: list[str]
    stoi: dict[str, int]

    def token_labels(self, ids: list[int]) -> list[str]:
        """Readable label per id for plot axes: specials in angle brackets, space as '␣'."""
        return [char_label(self.vocab[i]) for i in ids]

    def keep_known(self, text: str) -> str:
        return "".join(c for c in text if c in self.stoi)

    def token_id(self, piece: str) -> int | None:
        piece = LABEL_CHARS.get(piece, piece)
        return self.stoi.get(piece) if len(piece) == 1 else None

    def to_meta(self, folder: Path) -> dict[str, Any]:
        return {"kind": self.kind}  # the characters are checkpoint.json's "vocab"


class CharTokenizer(CharVocabulary):
    """Maps each known character to an id; ids 0-3 are PAD, SOS, EOS, UNK."""

    kind = "char"
    eos_id: int | None = EOS_ID
    pad_id: int | None = PAD_ID
    stop_id: int | None = None  # EOS is never sampled: a character model writes on
    never_sampled: tuple[int, ...] = tuple(range(len(SPECIAL_TOKENS)))

    def __init__(self, chars: str | list[str]) -> None:
        unique = list(dict.fromkeys(c for c in chars if c not in SPECIAL_TOKENS))
        if any(len(c) != 1 for c in unique):
            raise ValueError("CharTokenizer: every vocabulary entry must be one character")
        self.vocab: list[str] = [*SPECIAL_TOKENS, *unique]
        self.stoi = {s: i for i, s in enumerate(self.vocab)}

    @classmethod
    def from_vocab(cls, vocab: list[str]) -> CharTokenizer:
        """Rebuild from a saved `vocab` list (special tokens first)."""
        if list(vocab[:4]) != list(SPECIAL_TOKENS):
            raise ValueError(f"vocabulary must start with {SPECIAL_TOKENS}")
        return cls(vocab[4:])

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def chars(self) -> str:
        return "".join(self.vocab[4:])

    @property
    def ordinary_ids(self) -> list[int]:
        return list(range(len(SPECIAL_TOKENS), len(self.vocab)))

    @classmethod
    def from_meta(cls, meta: dict[str, Any], folder: Path) -> CharTokenizer:
        return cls.from_vocab(meta.get("vocab") or [])

    def encode_checked(self, text: str, *, max_chars: int | None = None) -> Encoded:
        """Ids for text; raises InputError when it is empty or longer than max_chars."""
        if not text:
            raise InputError("the input is empty: type at least one character")
        if max_chars is not None and len(text) > max_chars:
            raise InputError(f"the input has {len(text)} characters; the limit is {max_chars}")
        ids, unknown = [], []
        for i, ch in enumerate(text):
            idx = self.stoi.get(ch)
            if idx is None:
                unknown.append((i, ch))
                idx = UNK_ID
            ids.append(idx)
        return Encoded(ids, unknown)

    def encode(self, text: str) -> list[int]:
        """Ids for text, unknown characters as UNK (empty text gives [])."""
        return [self.stoi.get(ch, UNK_ID) for ch in text]

    def decode(self, ids: list[int], *, skip_special: bool = True) -> str:
        out = []
        for i in ids:
            if i < 4:
                if skip_special:
                    continue
                out.append(SPECIAL_TOKENS[i])
            else:
                out.append(self.vocab[i])
        return "".join(out)
