"""The tokenizers of imported models, and the registry that reopens any kind from a checkpoint.

Why: an imported model's ids must map 1:1 onto its own embedding rows, so its vocabulary
comes with it: nanoGPT's characters (`PlainCharTokenizer`, no special tokens) or GPT-2's
byte-level BPE (`BPETokenizer`, the `tokenizers` library on the model's tokenizer.json).
checkpoint.json records the kind as {"tokenizer": {"kind": ...}}; a checkpoint without it
is "char" (`CharTokenizer`, the models trained here).
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from transformer_core.errors import CheckpointError, InputError
from transformer_core.io.tokenizer import CharTokenizer, CharVocabulary, Encoded, Tokenizer

BPE_FILE = "tokenizer.json"
CONTROL_PICTURES = {chr(c): chr(0x2400 + c) for c in range(32)} | {"\x7f": "\u2421"}  # U+2400 block
BPE_LABELS = str.maketrans({**CONTROL_PICTURES, " ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"})


@functools.cache
def byte_symbols() -> dict[str, int]:
    """Byte-level BPE's alphabet (GPT-2): the printable character standing for each byte -> that
    byte. Printable Latin-1 bytes stand for themselves; the others, in order, for chr(256 + k)."""
    own = {*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)}
    others = [b for b in range(256) if b not in own]
    return {chr(b): b for b in own} | {chr(256 + k): b for k, b in enumerate(others)}


def _check_length(n: int, max_chars: int | None, unit: str) -> None:
    if max_chars is not None and n > max_chars:
        raise InputError(f"the input has {n} {unit}; the limit is {max_chars}")


class PlainCharTokenizer(CharVocabulary):
    """One id per character, ids 0..V-1 exactly as the vocabulary lists them (nanoGPT's itos):
    no PAD/SOS/EOS/UNK, so a character outside the vocabulary is an InputError naming it."""

    kind = "chars"
    eos_id: int | None = None
    pad_id: int | None = None
    stop_id: int | None = None
    never_sampled: tuple[int, ...] = ()

    def __init__(self, vocab: list[str]) -> None:
        if not vocab or any(not isinstance(c, str) or len(c) != 1 for c in vocab):
            raise CheckpointError("character vocabulary: every entry must be one character")
        if len(set(vocab)) != len(vocab):
            raise CheckpointError("character vocabulary: a character appears twice")
        self.vocab: list[str] = list(vocab)
        self.stoi = {c: i for i, c in enumerate(self.vocab)}

    def __len__(self) -> int:
        return len(self.vocab)

    @property
    def chars(self) -> str:
        return "".join(self.vocab)

    @property
    def ordinary_ids(self) -> list[int]:
        return list(range(len(self.vocab)))

    def encode_checked(self, text: str, *, max_chars: int | None = None) -> Encoded:
        """Ids for text; InputError when empty, too long or holding characters not in the vocabulary."""
        if not text:
            raise InputError("the input is empty: type at least one character")
        _check_length(len(text), max_chars, "characters")
        unknown = sorted({c for c in text if c not in self.stoi})
        if unknown:
            raise InputError(f"characters outside this model's vocabulary (it has no <unk>): {unknown}")
        return Encoded([self.stoi[c] for c in text], [])

    def encode(self, text: str) -> list[int]:
        return self.encode_checked(text).ids if text else []

    def decode(self, ids: list[int], *, skip_special: bool = True) -> str:
        return "".join(self.vocab[i] for i in ids)

    @classmethod
    def from_meta(cls, meta: dict[str, Any], folder: Path) -> PlainCharTokenizer:
        return cls(meta.get("vocab") or [])


class BPETokenizer:
    """A byte-level BPE tokenizer (GPT-2's) from a tokenizer.json, through `tokenizers`.

    vocab[i] is the text token i decodes to (" the", "\\n", ...); a model whose vocab_size
    exceeds the tokenizer's (nanoGPT pads GPT-2's 50257 to 50304) gets "<unused:N>" entries
    that generation never writes. stop_id: the end-of-text token, when there is one."""

    kind = "bpe"
    pad_id: int | None = None

    def __init__(self, json_text: str, vocab_size: int | None = None, eos_id: int | None = None) -> None:
        from tokenizers import Tokenizer as HFTokenizer  # lazily: only imported models need it

        try:
            spec = json.loads(json_text)
            self._tok = HFTokenizer.from_str(json_text)
        except Exception as e:  # the library raises plain Exceptions on a malformed file
            raise CheckpointError(f"{BPE_FILE}: not a tokenizers file ({e})") from None
        model_type = (spec.get("model") or {}).get("type")
        if model_type != "BPE":
            raise CheckpointError(f"{BPE_FILE}: a {model_type} tokenizer; only (byte-level) BPE is supported")
        self.json_text = json_text
        self.size = self._tok.get_vocab_size(with_added_tokens=True)
        self.vocab_size = self.size if vocab_size is None else vocab_size
        if self.vocab_size < self.size:
            raise CheckpointError(
                f"{BPE_FILE}: {self.size} tokens but the model embeds only {self.vocab_size}"
            )
        self.eos_id = self._tok.token_to_id("<|endoftext|>") if eos_id is None else eos_id
        self.stop_id = self.eos_id
        self.never_sampled = tuple(range(self.size, self.vocab_size))

    def __len__(self) -> int:
        return self.vocab_size

    @functools.cached_property
    def vocab(self) -> list[str]:  # type: ignore[override]
        """The text of every token, decoded once (50k tokens: a fraction of a second)."""
        pieces = self._tok.decode_batch([[i] for i in range(self.size)], skip_special_tokens=False)
        return [*pieces, *(f"<unused:{i}>" for i in range(self.size, self.vocab_size))]

    @property
    def ordinary_ids(self) -> list[int]:
        special = {i for i in self._tok.get_added_tokens_decoder()}
        return [i for i in range(self.size) if i not in special]

    def encode(self, text: str) -> list[int]:
        return self._tok.encode(text, add_special_tokens=False).ids if text else []

    def encode_checked(self, text: str, *, max_chars: int | None = None) -> Encoded:
        """Ids for text (byte-level: every text encodes); InputError when empty or longer than
        max_chars tokens (the model's context)."""
        if not text:
            raise InputError("the input is empty: type at least one character")
        if max_chars is not None:
            _check_length(len(text), 16 * max_chars, "characters")  # bound the work before tokenizing
        ids = self.encode(text)
        _check_length(len(ids), max_chars, "tokens")
        return Encoded(ids, [])

    def decode(self, ids: list[int], *, skip_special: bool = True) -> str:
        return self._tok.decode([i for i in ids if i < self.size], skip_special_tokens=skip_special)

    def token_labels(self, ids: list[int]) -> list[str]:
        """Each token's text piece, a space shown as ␣ and a newline as ↵ ("␣the", "↵"), control
        characters as their symbols (␀); a token that is part of a character's UTF-8 bytes
        as those bytes ("⟨E2 80⟩": it decodes to no character alone)."""
        return [self._label(i) for i in ids]

    @functools.lru_cache(maxsize=65_536)  # noqa: B019 (a tokenizer lives as long as its model)
    def _label(self, i: int) -> str:
        piece = self.vocab[i]
        if "\ufffd" not in piece or i >= self.size:
            return piece.translate(BPE_LABELS)
        symbols = byte_symbols()
        raw = [symbols[c] for c in self._tok.id_to_token(i) or "" if c in symbols]
        return "⟨" + " ".join(f"{b:02X}" for b in raw) + "⟩" if raw else piece

    def keep_known(self, text: str) -> str:
        return text  # byte-level: nothing is unknown

    def token_id(self, piece: str) -> int | None:
        piece = piece.replace("␣", " ").replace("↵", "\n")
        ids = self.encode(piece)
        return ids[0] if len(ids) == 1 else None

    def to_meta(self, folder: Path) -> dict[str, Any]:
        (folder / BPE_FILE).write_text(self.json_text, encoding="utf-8")
        sha = hashlib.sha256(self.json_text.encode("utf-8")).hexdigest()
        return {"kind": self.kind, "file": BPE_FILE, "sha256": sha, "eos_id": self.eos_id}

    @classmethod
    def from_file(cls, path: Path, vocab_size: int | None = None, eos_id: int | None = None) -> BPETokenizer:
        if not path.is_file():
            raise CheckpointError(f"{path}: tokenizer file not found")
        return cls(path.read_text(encoding="utf-8"), vocab_size, eos_id)

    @classmethod
    def from_meta(cls, meta: dict[str, Any], folder: Path) -> BPETokenizer:
        entry = meta["tokenizer"]
        path = folder / BPE_FILE  # never a path from the file: it stays inside the folder
        if not path.is_file():
            raise CheckpointError(f"{folder.name}: {BPE_FILE} is missing")
        text = path.read_text(encoding="utf-8")
        if entry.get("sha256") and hashlib.sha256(text.encode("utf-8")).hexdigest() != entry["sha256"]:
            raise CheckpointError(f"{folder.name}: {BPE_FILE} does not match its recorded checksum")
        return cls(text, (meta.get("config") or {}).get("vocab_size"), entry.get("eos_id"))


#: checkpoint.json's tokenizer kind -> its class (each has from_meta(meta, folder))
TOKENIZERS: dict[str, Any] = {"char": CharTokenizer, "chars": PlainCharTokenizer, "bpe": BPETokenizer}


def tokenizer_from_meta(meta: dict[str, Any], folder: Path) -> Tokenizer:
    """The tokenizer a checkpoint records: meta["tokenizer"]["kind"], "char" when absent."""
    entry = meta.get("tokenizer") or {"kind": "char"}
    kind = entry.get("kind") if isinstance(entry, dict) else None
    if kind not in TOKENIZERS:
        raise CheckpointError(f"{folder.name}: unknown tokenizer kind {kind!r} (known: {sorted(TOKENIZERS)})")
    return TOKENIZERS[kind].from_meta(meta, folder)
