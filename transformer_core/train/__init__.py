"""Training: presets, tasks, the trainer and its events, LR schedules, evaluation, runs in
worker processes."""

from transformer_core.train.backends import REDIS_URL_ENV, fetch_run, open_run_queue, redis_url
from transformer_core.train.evaluation import (
    evaluate_lm,
    evaluate_reversal,
)
from transformer_core.train.presets import (
    DEFAULT_SIZE,
    LIMITS,
    REPORT_LENGTHS,
    SIZES,
    TASK_POSITIONS,
    TRAIN_LENGTHS,
    optim_defaults,
    page_config,
    prepare_run,
    train_config,
)
from transformer_core.train.runs import (
    RunError,
    RunInfo,
    RunProgress,
    RunQueue,
    RunRequest,
    default_max_runs,
)
from transformer_core.train.schedules import (
    label_smoothing_target,
    vaswani_lr,
    warmup_cosine_lr,
)
from transformer_core.train.tasks import (
    LanguageModelTask,
    ReversalTask,
    Task,
)
from transformer_core.train.trainer import (
    DoneEvent,
    EvalEvent,
    StepEvent,
    TrainConfig,
    Trainer,
)

__all__ = [
    "DEFAULT_SIZE",
    "DoneEvent",
    "EvalEvent",
    "LIMITS",
    "LanguageModelTask",
    "REPORT_LENGTHS",
    "ReversalTask",
    "RunError",
    "RunInfo",
    "RunProgress",
    "RunQueue",
    "REDIS_URL_ENV",
    "RunRequest",
    "SIZES",
    "StepEvent",
    "TASK_POSITIONS",
    "TRAIN_LENGTHS",
    "Task",
    "TrainConfig",
    "Trainer",
    "default_max_runs",
    "evaluate_lm",
    "fetch_run",
    "open_run_queue",
    "redis_url",
    "evaluate_reversal",
    "label_smoothing_target",
    "optim_defaults",
    "page_config",
    "prepare_run",
    "train_config",
    "vaswani_lr",
    "warmup_cosine_lr",
]
