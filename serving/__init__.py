"""The serving layer: trainings on a shared box and past it, beside the model library.

Runs (a request, a folder, an unguessable id) go into a run store — SQLite on one box
(`sqlite_store`), Redis for several hosts (`redis_store`, chosen by ATTENTION_LAB_REDIS_URL
in `backends`) — and train in run processes (`run_process`) or Redis workers
(`redis_worker`), never in a web process. Every setting is parsed in `settings`. Arrows run
one way: the app imports this, this imports `transformer_core`, never the reverse.
"""

from serving.backends import fetch_run, open_run_store
from serving.ids import RunError, is_run_id, new_run_id, run_checkpoint_path
from serving.progress import ProgressWriter, RunProgress
from serving.request import LIMITS, RunRequest, page_config
from serving.store import RunControl, RunInfo, RunStore

__all__ = [
    "LIMITS",
    "ProgressWriter",
    "RunControl",
    "RunError",
    "RunInfo",
    "RunProgress",
    "RunRequest",
    "RunStore",
    "fetch_run",
    "is_run_id",
    "new_run_id",
    "open_run_store",
    "page_config",
    "run_checkpoint_path",
]
