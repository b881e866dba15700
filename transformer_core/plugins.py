"""What layers built on the library add to it, found through entry points (pyproject.toml):
more commands (`transformer_core.commands`) and more named checkpoints
(`transformer_core.checkpoint_sources`). The library never imports those layers itself.
"""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points
from typing import Any

COMMANDS_GROUP = "transformer_core.commands"  # each a cli.Command (the serving layer's `worker`)
SOURCES_GROUP = "transformer_core.checkpoint_sources"  # each name -> folder | None (run ids)


def load_plugins(group: str) -> list[Any]:
    """Every installed entry point of `group`, loaded; one that cannot be imported (a stale
    install) is skipped with a warning naming it, so the rest of the library still works."""
    loaded = []
    for ep in entry_points(group=group):
        try:
            loaded.append(ep.load())
        except (ImportError, AttributeError) as e:
            warnings.warn(f"{group}: {ep.name} = {ep.value} could not be loaded ({e})", stacklevel=2)
    return loaded
