"""transformer_core: a small, readable Transformer library whose attention can be watched.

This module is the surface for the nn level (attention, positions, masks, models, capture,
options, generation); `transformer_core.interp`, `.train` and `.io` are the surfaces of
the subpackages. The app and the command line import from these four, never deeper.
"""

import logging

from transformer_core.attention import (
    MultiHeadAttention,
    attention_scores,
    masked_softmax,
    scaled_dot_product_attention,
)
from transformer_core.beam import (
    MAX_BEAM_WIDTH,
    BeamResult,
    BeamStep,
    Hypothesis,
    beam_search,
    check_beam_width,
    length_penalty,
)
from transformer_core.capture import (
    AttentionCapture,
    AttentionRecord,
)
from transformer_core.config import (
    ATTENTION_KINDS,
    MODEL_KINDS,
    InferenceOptions,
    ModelConfig,
)
from transformer_core.device import (
    DEVICE_CHOICES,
    describe_device,
    resolve_device,
    set_cpu_threads,
)
from transformer_core.errors import (
    CheckpointError,
    ConfigError,
    InputError,
)
from transformer_core.generation import (
    filter_logits,
    generate,
    greedy_decode,
    sample_seq2seq,
)
from transformer_core.losses import (
    perplexity,
)
from transformer_core.masks import (
    causal_mask,
)
from transformer_core.models import (
    GPT,
    RecurrentSeq2Seq,
    Seq2Seq,
    build_model,
)
from transformer_core.positional import (
    POSITION_SCHEMES,
    PositionScheme,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_angles,
    shift_rotation,
    sinusoidal_positional_encoding,
    t5_relative_position_bucket,
)

# a library: the application decides where its lines go (none by default, not even warnings on stderr)
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "ATTENTION_KINDS",
    "AttentionCapture",
    "AttentionRecord",
    "BeamResult",
    "BeamStep",
    "CheckpointError",
    "ConfigError",
    "DEVICE_CHOICES",
    "GPT",
    "Hypothesis",
    "InferenceOptions",
    "InputError",
    "MAX_BEAM_WIDTH",
    "MODEL_KINDS",
    "ModelConfig",
    "MultiHeadAttention",
    "POSITION_SCHEMES",
    "PositionScheme",
    "RecurrentSeq2Seq",
    "Seq2Seq",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "attention_scores",
    "beam_search",
    "build_model",
    "causal_mask",
    "check_beam_width",
    "describe_device",
    "filter_logits",
    "generate",
    "greedy_decode",
    "length_penalty",
    "masked_softmax",
    "perplexity",
    "resolve_device",
    "rope_angles",
    "sample_seq2seq",
    "scaled_dot_product_attention",
    "set_cpu_threads",
    "shift_rotation",
    "sinusoidal_positional_encoding",
    "t5_relative_position_bucket",
]
