"""Input and output: tokenizers, corpora and reversal strings, checkpoints, exports (imports:
`transformer_core.io.importers`)."""

from transformer_core.io.checkpoint import (
    CHECKPOINTS_DIR,
    META_FILE,
    SOURCES_GROUP,
    WEIGHTS_FILE,
    Checkpoint,
    checkpoint_sources,
    list_checkpoints,
    load_checkpoint,
    read_meta,
    resolve_checkpoint,
    save_checkpoint,
    shipped_checkpoint_path,
)
from transformer_core.io.data import (
    corpus_from_bytes,
    encode_source,
    load_corpus,
)
from transformer_core.io.export_tl import (
    export_transformer_lens,
)
from transformer_core.io.tokenizer import (
    PAD_ID,
    CharTokenizer,
    Tokenizer,
)
from transformer_core.io.tokenizers import (
    BPETokenizer,
    PlainCharTokenizer,
)

__all__ = [
    "BPETokenizer",
    "CHECKPOINTS_DIR",
    "SOURCES_GROUP",
    "CharTokenizer",
    "Checkpoint",
    "META_FILE",
    "PAD_ID",
    "PlainCharTokenizer",
    "Tokenizer",
    "WEIGHTS_FILE",
    "checkpoint_sources",
    "corpus_from_bytes",
    "encode_source",
    "export_transformer_lens",
    "list_checkpoints",
    "load_checkpoint",
    "load_corpus",
    "read_meta",
    "resolve_checkpoint",
    "save_checkpoint",
    "shipped_checkpoint_path",
]
