"""Input and output: character tokenizer, corpora and reversal strings, checkpoints and run ids, exports."""

from transformer_core.io.checkpoint import (
    CHECKPOINTS_DIR,
    META_FILE,
    WEIGHTS_FILE,
    Checkpoint,
    is_run_id,
    list_checkpoints,
    load_checkpoint,
    read_meta,
    resolve_checkpoint,
    run_checkpoint_path,
    runs_dir,
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
)

__all__ = [
    "CHECKPOINTS_DIR",
    "CharTokenizer",
    "Checkpoint",
    "META_FILE",
    "PAD_ID",
    "WEIGHTS_FILE",
    "corpus_from_bytes",
    "encode_source",
    "export_transformer_lens",
    "is_run_id",
    "list_checkpoints",
    "load_checkpoint",
    "load_corpus",
    "read_meta",
    "resolve_checkpoint",
    "run_checkpoint_path",
    "runs_dir",
    "save_checkpoint",
    "shipped_checkpoint_path",
]
