"""Per-call capture of attention internals, TransformerLens style.

Pass an `AttentionCapture` as `forward(..., capture=cap)`; each attention layer then runs
the explicit path and appends one `AttentionRecord`. The capture belongs to the call,
never to the model, so concurrent users never see each other's activations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class AttentionRecord:
    """Everything one attention layer computed, detached, shapes (B, H, T, .).

    q_raw/k_raw are the projections before RoPE; q/k are what the scores use.
    scores are pre-softmax: scaled by 1/sqrt(d_k) and with the position bias, before the
    mask. mask is boolean (True = may attend), broadcastable to (B, H, Tq, Tk), or None.
    position_bias is ALiBi's or T5's (H, Tq, Tk), already inside scores, or None.
    A Bahdanau model's record has one head: q the decoder states s_{t-1}, k = v the encoder
    states h_j, scores v.tanh(W_s s + W_h h), scale 1.
    """

    kind: str
    layer: int
    q_raw: torch.Tensor
    k_raw: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scores: torch.Tensor
    mask: torch.Tensor | None
    position_bias: torch.Tensor | None
    weights: torch.Tensor
    scale: float

    @property
    def z(self) -> torch.Tensor:
        """Every head's output before the output projection (B, H, Tq, d_head): weights @ v,
        TransformerLens's hook_z (heads on axis 1 here), what activation patching swaps."""
        return self.weights @ self.v

    @property
    def name(self) -> str:
        """Stable activation name, e.g. 'cross.1' or 'self.0'."""
        return f"{self.kind}.{self.layer}"

    @property
    def full_mask(self) -> torch.Tensor:
        """The mask expanded to the weights' shape (all True when there was none)."""
        if self.mask is None:
            return torch.ones_like(self.weights, dtype=torch.bool)
        return self.mask.expand_as(self.weights)


@dataclass
class AttentionCapture:
    """Collects one `AttentionRecord` per attention layer of a forward call, and the
    residual stream (B, T, d_model) around every block under stable names
    '{kind}.{layer}.resid_pre' / '{kind}.{layer}.resid_post' (what the logit lens reads).

    context: the one fixed vector (B, d_model) a decoder without attention reads (a `gru`
    model); such a call adds no record, since there is nothing to attend."""

    records: list[AttentionRecord] = field(default_factory=list)
    residuals: dict[str, torch.Tensor] = field(default_factory=dict)
    context: torch.Tensor | None = None

    def set_context(self, context: torch.Tensor) -> None:
        self.context = context.detach()

    @property
    def attends(self) -> bool:
        """Whether the call attended anywhere (False for a decoder with one fixed context)."""
        return bool(self.records)

    def add(self, record: AttentionRecord) -> None:
        self.records.append(record)

    def add_residual(self, name: str, x: torch.Tensor) -> None:
        self.residuals[name] = x.detach()

    def __getitem__(self, name: str) -> AttentionRecord:
        for record in self.records:
            if record.name == name:
                return record
        raise KeyError(f"no captured attention named {name!r}; have {self.names}")

    @property
    def names(self) -> list[str]:
        return [r.name for r in self.records]

    def kinds(self) -> list[str]:
        return list(dict.fromkeys(r.kind for r in self.records))

    def weights(self, kind: str, batch_index: int = 0) -> torch.Tensor:
        """Attention weights of every layer of one kind: (L, H, Tq, Tk)."""
        layers = [r for r in self.records if r.kind == kind]
        if not layers:
            raise KeyError(f"no captured attention of kind {kind!r}; have {self.kinds()}")
        layers.sort(key=lambda r: r.layer)
        return torch.stack([r.weights[batch_index] for r in layers])
