"""transformer_core: a small, readable Transformer library whose attention can be watched.

Public entry points: `ModelConfig`, `InferenceOptions`, `GPT`, `Seq2Seq`,
`AttentionCapture`, the tokenizer and tasks in `data`, `generation`, `trace`, and the
trainer and checkpoints used by the command line (`python -m transformer_core`).
"""

from transformer_core.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer_core.capture import AttentionCapture, AttentionRecord
from transformer_core.config import InferenceOptions, ModelConfig
from transformer_core.errors import CheckpointError, ConfigError, InputError
from transformer_core.io.tokenizer import CharTokenizer
from transformer_core.models import GPT, Seq2Seq, build_model
from transformer_core.positional import sinusoidal_positional_encoding

__all__ = [
    "GPT",
    "AttentionCapture",
    "AttentionRecord",
    "CharTokenizer",
    "CheckpointError",
    "ConfigError",
    "InferenceOptions",
    "InputError",
    "ModelConfig",
    "MultiHeadAttention",
    "Seq2Seq",
    "build_model",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
]
