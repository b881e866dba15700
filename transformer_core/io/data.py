"""Tasks' data: string reversal, and character language modelling (next or masked) on a corpus."""

from __future__ import annotations

import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

from transformer_core.errors import InputError
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.vocab import EOS_ID, PAD_ID, SOS_ID

REVERSAL_ALPHABET = string.ascii_lowercase
MAX_CORPUS_BYTES = 20_000_000


# ---------------------------------------------------------------- string reversal


def reversal_tokenizer(alphabet: str = REVERSAL_ALPHABET) -> CharTokenizer:
    return CharTokenizer(alphabet)


def random_strings(
    n: int, min_len: int, max_len: int, generator: torch.Generator, alphabet: str = REVERSAL_ALPHABET
) -> list[str]:
    """n random strings with lengths uniform in [min_len, max_len]."""
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=generator).tolist()
    letters = torch.randint(0, len(alphabet), (sum(lengths),), generator=generator).tolist()
    out, start = [], 0
    for length in lengths:
        out.append("".join(alphabet[i] for i in letters[start : start + length]))
        start += length
    return out


def random_positions(length: int, range_size: int, generator: torch.Generator) -> torch.Tensor:
    """An increasing random subset of [0, range_size) of size `length` (Ruoss et al., 2023):
    the order survives, and positions beyond the training lengths get trained too."""
    if length > range_size:
        raise InputError(f"cannot draw {length} distinct positions from a range of {range_size}")
    return torch.randperm(range_size, generator=generator)[:length].sort().values


@dataclass(frozen=True)
class ReversalBatch:
    """src = text + EOS; tgt_in = SOS + reversed; tgt_out = reversed + EOS; PAD-padded."""

    src: torch.Tensor  # (B, Ts)
    tgt_in: torch.Tensor  # (B, Tt)
    tgt_out: torch.Tensor  # (B, Tt)


def _pad(rows: list[list[int]], device: torch.device | str) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD_ID] * (width - len(r)) for r in rows], device=device)


def encode_source(
    tokenizer: CharTokenizer, texts: list[str], device: torch.device | str = "cpu"
) -> torch.Tensor:
    """Source ids (B, Ts): each text then EOS, so relative schemes can see where it ends."""
    return _pad([tokenizer.encode(t) + [EOS_ID] for t in texts], device)


def reversal_batch(
    tokenizer: CharTokenizer, texts: list[str], device: torch.device | str = "cpu"
) -> ReversalBatch:
    targets = [tokenizer.encode(t[::-1]) for t in texts]
    return ReversalBatch(
        src=encode_source(tokenizer, texts, device),
        tgt_in=_pad([[SOS_ID] + t for t in targets], device),
        tgt_out=_pad([t + [EOS_ID] for t in targets], device),
    )


# ---------------------------------------------------------------- language modelling


def default_corpus() -> str:
    """The Python standard library's bundled documentation topics: always offline."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[key] for key in sorted(topics))


def load_corpus(path: str | Path | None = None, *, max_bytes: int = MAX_CORPUS_BYTES) -> str:
    """The default corpus, or a UTF-8 text file (clear errors for empty/binary/huge files)."""
    if path is None:
        return default_corpus()
    path = Path(path)
    if not path.is_file():
        raise InputError(f"corpus file not found: {path}")
    size = path.stat().st_size
    if size > max_bytes:
        raise InputError(f"corpus file is {size:,} bytes; the limit is {max_bytes:,}")
    return corpus_from_bytes(path.read_bytes(), name=path.name)


def corpus_from_bytes(raw: bytes, *, name: str = "upload", max_bytes: int = MAX_CORPUS_BYTES) -> str:
    """Decode an uploaded corpus, refusing binary, empty and oversized data by name."""
    if len(raw) > max_bytes:
        raise InputError(f"{name} is {len(raw):,} bytes; the limit is {max_bytes:,}")
    if b"\x00" in raw[:65536]:
        raise InputError(f"{name} looks binary (it contains NUL bytes); upload a UTF-8 text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{name} is not UTF-8 text (byte {e.start} cannot be decoded)") from None
    text = text.removeprefix("\ufeff")
    if len(text.strip()) < 100:
        raise InputError(f"{name} has {len(text.strip())} non-blank characters; need at least 100")
    return text


def corpus_tokenizer(text: str, min_count: int = 1, max_vocab: int = 250) -> CharTokenizer:
    """Characters seen at least min_count times (most frequent max_vocab), sorted."""
    counts = Counter(text)
    common = [c for c, n in counts.most_common(max_vocab) if n >= min_count]
    return CharTokenizer(sorted(common))


MASK_CHAR = "\u2588"  # the character a masked-LM vocabulary ends with: BERT's [MASK], drawn as a block


def mlm_tokenizer(text: str) -> CharTokenizer:
    """corpus_tokenizer's characters plus MASK_CHAR last (a corpus's own MASK_CHAR is not kept)."""
    return CharTokenizer([*corpus_tokenizer(text.replace(MASK_CHAR, "")).chars, MASK_CHAR])


def mask_tokens(
    ids: torch.Tensor, mask_id: int, ordinary: torch.Tensor, generator: torch.Generator, rate: float = 0.15
) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's masking (Devlin et al. 2019) of ids (B, T): each position is chosen with
    probability `rate` (at least one per row); a chosen one becomes mask_id 80% of the time,
    a random id of `ordinary` (K,) 10%, itself 10%. -> (inputs (B, T), targets (B, T)): targets
    hold the original id at chosen positions and -100 (ignored by the loss) elsewhere."""
    B, T = ids.shape
    chosen = torch.rand(B, T, generator=generator) < rate  # (B, T)
    chosen[torch.arange(B), torch.randint(0, T, (B,), generator=generator)] = True
    action = torch.rand(B, T, generator=generator)  # < 0.8 mask, < 0.9 random, else kept
    random_ids = ordinary[torch.randint(0, len(ordinary), (B, T), generator=generator)]
    inputs = torch.where(chosen & (action < 0.8), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_ids, inputs)
    targets = torch.where(chosen, ids, torch.full_like(ids, -100))
    return inputs, targets


def split_ids(ids: torch.Tensor, val_fraction: float = 0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """Contiguous train/validation split: the last val_fraction of the text is held out."""
    cut = int(len(ids) * (1 - val_fraction))
    return ids[:cut], ids[cut:]


def lm_batch(
    ids: torch.Tensor, block_size: int, batch_size: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows: x (B, T) and y = x shifted left by one (B, T)."""
    # a window needs block_size + 1 ids, so the last start is len(ids) - block_size - 1
    starts = torch.randint(0, len(ids) - block_size, (batch_size,), generator=generator)
    offsets = torch.arange(block_size)
    x = ids[starts[:, None] + offsets]  # (B, T)
    y = ids[starts[:, None] + offsets + 1]  # (B, T)
    return x, y


INDUCTION_PROBE = "qwhzkfjtmbrxqwhzkfjtmbrx"  # a random segment of 12 letters, twice
INDUCTION_SEQ_LEN = 64  # an induction row: inputs of 64 tokens
INDUCTION_SEGMENTS = (6, 20)  # its segment's shortest and longest length


def induction_rows(
    batch_size: int, seq_len: int, min_segment: int, max_segment: int, vocab: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (B, seq_len + 1) over ids 0..vocab-1 (the caller shifts them) and where the
    second copy starts per row (B,) = the segment's length. Row: a random segment S of random
    length in [min_segment, max_segment], repeated until the row is full (S S S ...)."""
    total = seq_len + 1
    rows = torch.empty(batch_size, total, dtype=torch.long)
    lengths = torch.randint(min_segment, max_segment + 1, (batch_size,), generator=generator)
    for b in range(batch_size):
        n = int(lengths[b])
        segment = torch.randint(0, vocab, (n,), generator=generator)
        rows[b] = segment.repeat(total // n + 1)[:total]
    return rows, lengths


def induction_ids(
    tokenizer: CharTokenizer,
    batch_size: int,
    generator: torch.Generator,
    seq_len: int = INDUCTION_SEQ_LEN,
    min_segment: int = INDUCTION_SEGMENTS[0],
    max_segment: int = INDUCTION_SEGMENTS[1],
) -> tuple[torch.Tensor, torch.Tensor]:
    """`induction_rows` over the tokenizer's ordinary characters (special ids skipped):
    token ids (B, seq_len + 1) and each row's segment length (B,)."""
    chars = len(tokenizer.chars)
    rows, starts = induction_rows(batch_size, seq_len, min_segment, max_segment, chars, generator)
    return rows + (len(tokenizer) - chars), starts
