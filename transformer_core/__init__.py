"""transformer_core: a small, readable Transformer library whose attention can be watched.

This module is the surface for the nn level (attention, positions, masks, models, capture,
options, generation); `transformer_core.interp`, `.train` and `.io` are the surfaces of
the subpackages. The app and the command line import from these four, never deeper.
"""

from transformer_core.attention import (
    MultiHeadAttention,
    attention_scores,
    masked_softmax,
    scaled_dot_product_attention,
)
from transformer_core.capture import (
    AttentionCapture,
    AttentionRecord,
)
from transformer_core.config import (
    ATTENTION_KINDS,
    InferenceOptions,
    ModelConfig,
)
from transformer_core.device import (
    DEVICE_CHOICES,
    describe_device,
    resolve_device,
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
)
from transformer_core.masks import (
    causal_mask,
)
from transformer_core.models import (
    GPT,
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
)

__all__ = [
    "ATTENTION_KINDS",
    "AttentionCapture",
    "AttentionRecord",
    "CheckpointError",
    "ConfigError",
    "DEVICE_CHOICES",
    "GPT",
    "InferenceOptions",
    "InputError",
    "ModelConfig",
    "MultiHeadAttention",
    "POSITION_SCHEMES",
    "PositionScheme",
    "Seq2Seq",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "attention_scores",
    "build_model",
    "causal_mask",
    "describe_device",
    "filter_logits",
    "generate",
    "greedy_decode",
    "masked_softmax",
    "resolve_device",
    "rope_angles",
    "scaled_dot_product_attention",
    "shift_rotation",
    "sinusoidal_positional_encoding",
]
