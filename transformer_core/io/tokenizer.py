"""Character tokenizer with the four special tokens PAD, SOS, EOS and UNK."""

from __future__ import annotations

from dataclasses import dataclass

from transformer_core.errors import InputError
from transformer_core.vocab import EOS_ID, PAD_ID, SOS_ID, SPECIAL_TOKENS, UNK_ID

__all__ = ["CharTokenizer", "Encoded", "EOS_ID", "PAD_ID", "SOS_ID", "SPECIAL_TOKENS", "UNK_ID"]


@dataclass(frozen=True)
class Encoded:
    """Token ids of a text and the characters that were replaced by UNK, as (index, char)."""

    ids: list[int]
    unknown: list[tuple[int, str]]

    @property
    def unknown_chars(self) -> list[str]:
        return sorted({c for _, c in self.unknown})


class CharTokenizer:
    """Maps each known character to an id; ids 0-3 are PAD, SOS, EOS, UNK."""

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

    def token_labels(self, ids: list[int]) -> list[str]:
        """Readable label per id for plot axes: specials in angle brackets, space as '␣'."""
        labels = []
        for i in ids:
            s = self.vocab[i]
            labels.append({" ": "␣", "\n": "⏎", "\t": "⇥"}.get(s, s))
        return labels
