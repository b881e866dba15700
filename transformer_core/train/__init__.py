"""Training: the task registry and its presets, tasks, the trainer and its events, LR
schedules, evaluation. Runs on a shared box (queues, run processes) are the serving
layer's (`serving`), not the library's."""

from transformer_core.losses import (
    perplexity,
)
from transformer_core.train.evaluation import (
    evaluate_lm,
    evaluate_reversal,
)
from transformer_core.train.presets import (
    default_positions,
    model_config,
    model_shape,
    prepare_run,
    train_config,
)
from transformer_core.train.registry import (
    DEFAULT_SIZE,
    REPORT_LENGTHS,
    TASKS,
    TRAIN_LENGTHS,
    OptimDefaults,
    TaskRecipe,
    checkpoint_recipe,
    task_recipe,
)
from transformer_core.train.schedules import (
    label_smoothing_target,
    lr_curves,
    vaswani_lr,
    warmup_cosine_lr,
)
from transformer_core.train.tasks import (
    LanguageModelTask,
    ReversalTask,
    Task,
    attention_arrays,
)
from transformer_core.train.trainer import (
    DoneEvent,
    EvalEvent,
    SnapshotEvent,
    StepEvent,
    TrainConfig,
    Trainer,
    TrainEvent,
)

__all__ = [
    "DEFAULT_SIZE",
    "DoneEvent",
    "EvalEvent",
    "LanguageModelTask",
    "OptimDefaults",
    "REPORT_LENGTHS",
    "ReversalTask",
    "SnapshotEvent",
    "StepEvent",
    "TASKS",
    "TRAIN_LENGTHS",
    "Task",
    "TaskRecipe",
    "TrainConfig",
    "TrainEvent",
    "Trainer",
    "attention_arrays",
    "default_positions",
    "evaluate_lm",
    "evaluate_reversal",
    "label_smoothing_target",
    "lr_curves",
    "model_config",
    "model_shape",
    "perplexity",
    "prepare_run",
    "checkpoint_recipe",
    "task_recipe",
    "train_config",
    "vaswani_lr",
    "warmup_cosine_lr",
]
