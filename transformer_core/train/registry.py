"""The training tasks, one registry: each task's name, model family, sizes, optimiser
defaults and how to build it.

Like `POSITION_SCHEMES`, `TASKS` is the one place a task is described: the config's task
choices, the command line, the presets and the /train page all read it, so a new task is
one `TaskRecipe` here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from transformer_core.config import ARCH_TASKS
from transformer_core.errors import ConfigError
from transformer_core.io.data import corpus_tokenizer, load_corpus, reversal_tokenizer
from transformer_core.train.induction import InductionTask
from transformer_core.train.mlm import MaskedLanguageModelTask
from transformer_core.train.tasks import LanguageModelTask, ReversalTask, Task

REPORT_LENGTHS: tuple[int, ...] = (3, 5, 7, 10, 12, 15)  # reversal: training lengths and beyond
TRAIN_LENGTHS: tuple[int, int] = (3, 10)  # reversal strings in training: min_len, max_len
DEFAULT_SIZE = "small"  # the size every shipped checkpoint has


class TaskSettings(Protocol):
    """What building a task reads of a run's settings (TrainConfig has it)."""

    @property
    def min_len(self) -> int: ...
    @property
    def max_len(self) -> int: ...
    @property
    def block_size(self) -> int: ...
    @property
    def corpus(self) -> str | None: ...
    @property
    def random_positions(self) -> bool: ...


@dataclass(frozen=True)
class OptimDefaults:
    """Steps, batch size and peak learning rate a task trains with unless told otherwise."""

    steps: int
    batch_size: int
    lr: float


@dataclass(frozen=True)
class TaskRecipe:
    """A task and everything its runs default to.

    shape: the model fields a size does not change; sizes: size name -> d_model, n_layers,
    n_heads, d_ff ("small" is what ships); positions: the scheme the task needs, if any;
    watched_evals: evaluations in a run someone watches (/train); watched_optim: its steps,
    batch size and learning rate where they differ from `optim` (the command line's);
    watched_size: its model size; kind_sizes: the sizes of model kinds other than the
    Transformer (config.model, e.g. the recurrent baselines of reversal) by kind; patch_pair:
    a clean and a corrupted text of equal length, what activation patching contrasts by default.
    """

    name: str
    title: str  # for people: "String reversal (encoder-decoder)"
    short: str  # in run labels: "my-<short>-<scheme>"
    arch: Literal["gpt", "seq2seq", "bert"]
    shape: dict[str, int | bool]
    sizes: dict[str, dict[str, int]]
    optim: OptimDefaults
    build: Callable[[TaskSettings, str | None], Task]
    patch_pair: tuple[str, str]
    positions: str | None = None
    watched_evals: int = 5
    watched_optim: OptimDefaults | None = None  # a run someone watches on /train, if not `optim`
    watched_size: str = DEFAULT_SIZE
    config_defaults: dict[str, int] = field(default_factory=dict)  # TrainConfig fields of the task
    kind_sizes: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    @property
    def model_kinds(self) -> tuple[str, ...]:
        """The config.model values this task trains: the Transformer, then kind_sizes' kinds."""
        return ("transformer", *self.kind_sizes)

    def sizes_of(self, kind: str) -> dict[str, dict[str, int]]:
        """Size name -> shape of one model kind; ConfigError for a kind the task does not train."""
        if kind not in self.model_kinds:
            raise ConfigError(f"arch: {kind!r} is not one of {self.model_kinds} for task {self.name!r}")
        return self.sizes if kind == "transformer" else self.kind_sizes[kind]

    @property
    def page_optim(self) -> OptimDefaults:
        """What a run started on /train defaults to: short enough to watch in a lecture."""
        return self.watched_optim or self.optim

    @property
    def model_task(self) -> str:
        """The task its checkpoints report (Checkpoint.task): an induction run is a GPT ("lm")."""
        return ARCH_TASKS[self.arch]


def build_reversal(settings: TaskSettings, text: str | None = None) -> Task:
    """Reversal of random lowercase strings; reports every REPORT_LENGTHS length (randomized
    positions are set by `prepare_run`, which knows the model's max_len)."""
    return ReversalTask(reversal_tokenizer(), settings.min_len, settings.max_len, eval_lengths=REPORT_LENGTHS)


def build_language_model(settings: TaskSettings, text: str | None = None) -> Task:
    """Next-character prediction on `text`, else the configured corpus (default: Python's docs)."""
    text = load_corpus(settings.corpus) if text is None else text
    return LanguageModelTask.from_text(corpus_tokenizer(text), text, settings.block_size)


def build_masked_language_model(settings: TaskSettings, text: str | None = None) -> Task:
    """Masked characters of `text`, else the configured corpus: the GPTs' data, read both ways."""
    text = load_corpus(settings.corpus) if text is None else text
    return MaskedLanguageModelTask.from_text(text, settings.block_size)


def build_induction(settings: TaskSettings, text: str | None = None) -> Task:
    """Random lowercase segments repeated (train.induction)."""
    return InductionTask(reversal_tokenizer())


# a GRU layer of 2 * d_model units has about the parameters of the Transformer of that size
RECURRENT_SIZES: dict[str, dict[str, int]] = {
    size: dict(d_model=d, n_layers=1, n_heads=1, d_ff=d)
    for size, d in (("tiny", 64), ("small", 128), ("medium", 256))
}

TASKS: dict[str, TaskRecipe] = {
    "reverse": TaskRecipe(
        name="reverse",
        title="String reversal (encoder-decoder)",
        short="reverse",
        arch="seq2seq",
        shape=dict(max_len=32),
        sizes={
            "tiny": dict(d_model=32, n_layers=1, n_heads=2, d_ff=128),
            "small": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
            "medium": dict(d_model=128, n_layers=3, n_heads=4, d_ff=512),
        },
        optim=OptimDefaults(steps=3000, batch_size=64, lr=2e-3),  # the shipped checkpoints' (train_all.sh)
        # watched: one layer of two heads; on one thread of the 2-core box a cross-attention head
        # is anti-diagonal (>= 0.6) 8.9 s after Start and the run ends in 37.5 s at exact match
        # >= 0.99 on lengths 3-10 (python benchmarks/bench_time_to_accuracy.py --page-run)
        watched_optim=OptimDefaults(steps=1000, batch_size=64, lr=1e-2),
        watched_size="tiny",
        build=build_reversal,
        patch_pair=("attention", "retention"),  # the source changed in its first letters
        config_defaults=dict(min_len=TRAIN_LENGTHS[0], max_len=TRAIN_LENGTHS[1]),
        kind_sizes={"gru": RECURRENT_SIZES, "bahdanau": RECURRENT_SIZES},  # chapter 004's baselines
    ),
    "lm": TaskRecipe(
        name="lm",
        title="Character language model (GPT)",
        short="gpt",
        arch="gpt",
        shape=dict(max_len=128),
        sizes={
            "tiny": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
            "small": dict(d_model=128, n_layers=4, n_heads=4, d_ff=512),
            "medium": dict(d_model=192, n_layers=6, n_heads=6, d_ff=768),
        },
        optim=OptimDefaults(steps=1000, batch_size=32, lr=3e-3),
        build=build_language_model,
        patch_pair=("The cat sat on the mat. The cat sat", "The dog ran to the bus. The cat sat"),
    ),
    # BERT's objective (Devlin et al. 2019) on the GPTs' corpus and sizes: fill in hidden characters
    "mlm": TaskRecipe(
        name="mlm",
        title="Masked language model (BERT, bidirectional)",
        short="bert",
        arch="bert",
        shape=dict(max_len=128),
        sizes={
            "tiny": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
            "small": dict(d_model=128, n_layers=4, n_heads=4, d_ff=512),
            "medium": dict(d_model=192, n_layers=6, n_heads=6, d_ff=768),
        },
        optim=OptimDefaults(steps=3000, batch_size=32, lr=3e-3),  # bert-char's (train_all.sh)
        watched_optim=OptimDefaults(steps=600, batch_size=32, lr=3e-3),
        watched_size="tiny",
        build=build_masked_language_model,
        patch_pair=("The cat sat on the mat.", "The dog ran to the bus."),
    ),
    # attention-only (Olsson et al. 2022): a previous-token head feeds an induction head
    "induction": TaskRecipe(
        name="induction",
        title="Induction heads: a random segment repeated (attention-only GPT)",
        short="induction",
        arch="gpt",
        shape=dict(max_len=64, mlp=False),
        sizes={  # d_ff unused (no MLP)
            "tiny": dict(d_model=32, n_layers=2, n_heads=2, d_ff=128),
            "small": dict(d_model=64, n_layers=2, n_heads=4, d_ff=256),
        },
        optim=OptimDefaults(steps=1500, batch_size=32, lr=3e-3),
        build=build_induction,
        patch_pair=("qwhzkfjtmbrxqwhzkfjtmbrx", "qwhzkfjtmbrxpnsgadeucvlo"),  # the repeat, or not
        positions="learned",  # the shipped recipe: induction heads form by ~1000 steps (rope: not in 1500)
        watched_evals=20,  # each carries every head's detector scores: the curves show the induction bump
    ),
}


def task_recipe(name: str) -> TaskRecipe:
    """The registry's recipe for `name`; anything else is a clear ConfigError."""
    if name not in TASKS:
        raise ConfigError(f"task: {name!r} is not one of {tuple(TASKS)}")
    return TASKS[name]


def checkpoint_recipe(arch: str, training_task: str | None) -> TaskRecipe:
    """The recipe a checkpoint was trained by: its run's task where it names one (an induction
    GPT), else its architecture's ("reverse" for an encoder-decoder, "lm" for a GPT)."""
    if training_task in TASKS and TASKS[training_task].arch == arch:
        return TASKS[training_task]
    return TASKS[ARCH_TASKS[arch]]
