"""The serving layer: trainings on a shared box and past it, beside the model library.

Runs (a request, a folder, an unguessable id) go into a run store — SQLite on one box
(`sqlite_store`), Redis for several hosts (`redis_store`, chosen by ATTENTION_LAB_REDIS_URL
in `backends`) — and train in run processes (`run_process`) or Redis workers
(`redis_worker`), never in a web process. Every setting is parsed in `settings`. Arrows run
one way: the app imports this, this imports `transformer_core`, never the reverse.
"""

from attention_lab.serving.backends import fetch_run, open_run_store
from attention_lab.serving.ids import RunError, is_run_id, new_run_id, run_checkpoint_path
from attention_lab.serving.progress import ProgressWriter, RunProgress
from attention_lab.serving.request import LIMITS, RunRequest, page_config
from attention_lab.serving.store import RunControl, RunInfo, RunStore

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
