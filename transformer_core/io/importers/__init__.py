"""Import models trained elsewhere as normal checkpoint folders: `python -m transformer_core
import SOURCE --from nanogpt|hf|transformer-lens --out DIR`.

Why a registry: each source kind is one module with one function (source path, options) ->
`Imported`; the command line, the tests and the benchmark all go through `import_model`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transformer_core.errors import CheckpointError
from transformer_core.io.importers.common import Imported, write_checkpoint
from transformer_core.io.importers.hf import import_hf
from transformer_core.io.importers.nanogpt import import_nanogpt
from transformer_core.io.importers.transformer_lens import import_transformer_lens
from transformer_core.models import GPT, count_parameters

#: --from name -> importer(source, meta=..., tokenizer=...) -> Imported
IMPORTERS: dict[str, Callable[..., Imported]] = {
    "nanogpt": import_nanogpt,
    "hf": import_hf,
    "transformer-lens": import_transformer_lens,
}


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote: the folder, the model in memory and the facts `import --json` prints."""

    out: Path
    model: GPT
    imported: Imported

    def to_json(self) -> dict[str, Any]:
        cfg = self.imported.config
        return {
            "name": self.out.name,
            "out": str(self.out),
            "source": self.imported.source.get("path"),
            "from": self.imported.source.get("from"),
            "parameters": count_parameters(self.model),
            "vocab_size": cfg.vocab_size,
            "tokenizer": self.imported.tokenizer.kind,
            "config": cfg.to_dict(),
        }


def import_model(
    source: str | Path,
    kind: str,
    out: str | Path,
    *,
    meta: str | Path | None = None,
    tokenizer: str | Path | None = None,
) -> ImportResult:
    """Read a model of `kind` from source and write it as a checkpoint folder `out`.

    meta: nanoGPT's meta.pkl when it is not beside ckpt.pt; tokenizer: a tokenizer.json when
    the source has none beside it. Nothing is unpickled except meta.pkl's plain data."""
    if kind not in IMPORTERS:
        raise CheckpointError(f"import: --from {kind!r} is not one of {sorted(IMPORTERS)}")
    path = Path(source)
    if not path.exists():
        raise CheckpointError(f"import: {path} not found")
    imported = IMPORTERS[kind](
        path,
        meta=None if meta is None else Path(meta),
        tokenizer=None if tokenizer is None else Path(tokenizer),
    )
    folder, model = write_checkpoint(imported, Path(out))
    return ImportResult(folder, model, imported)


__all__ = ["IMPORTERS", "ImportResult", "Imported", "import_model"]
