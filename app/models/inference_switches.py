"""The inference-time switches of the explorer pages, one widget for /gpt, /reversal and
/compare: toggles that turn a mask or the positions off, and the heads to ablate.

Each switch is named by its URL parameter (`nopos`, `nocausal`, `nopad`, `noscale`) and maps
to one InferenceOptions field; `window` is a sliding window's width. The weights are never edited.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from attention_lab.frame.markdown_safe import md_code
from transformer_core import InferenceOptions

#: URL name of a switch -> the InferenceOptions field it turns off
FIELDS = {"nopos": "positions", "nocausal": "causal", "nopad": "padding_mask", "noscale": "scale_scores"}


@dataclass(frozen=True)
class Switch:
    """One toggle: its URL name (a key in FIELDS), the label people and tests know, its help."""

    name: str
    label: str
    help: str


NO_POSITIONS = Switch(
    "nopos",
    "Drop positional information",
    "Same weights, no position signal: no added codes, no RoPE rotation, no ALiBi bias.",
)


@dataclass(frozen=True)
class Switched:
    """What the switches say: which are off, and which heads ("layer.head") are ablated."""

    off: dict[str, bool]
    ablate: tuple[str, ...] | None = None  # None: the page offers no ablation
    window: int = 0  # sliding window: each query sees keys fewer than `window` positions away; 0: none

    def __getitem__(self, name: str) -> bool:
        return self.off.get(name, False)

    def options(self) -> InferenceOptions:
        """The InferenceOptions of these switches (self-attention heads for the ablation)."""
        fields = {FIELDS[name]: not off for name, off in self.off.items()}
        heads = frozenset(("self", *map(int, a.split("."))) for a in self.ablate or ())
        return InferenceOptions(**fields, ablate=heads, sliding_window=self.window or None)

    def as_json(self) -> dict[str, Any]:
        """The switches as a download records them: each option's value, and the ablated heads."""
        shown: dict[str, Any] = {FIELDS[name]: not off for name, off in self.off.items()}
        if self.window:
            shown["sliding_window"] = self.window
        return shown if self.ablate is None else {**shown, "ablate": list(self.ablate)}


def switch_toggles(where: Any, prefix: str, switches: Sequence[Switch]) -> dict[str, bool]:
    """A toggle per switch in `where`, keyed prefix + URL name; {name: switched off}."""
    return {
        s.name: bool(where.toggle(s.label, key=prefix + s.name, persist_state="session", help=s.help))
        for s in switches
    }


WINDOW_HELP = (
    "Sliding-window attention (Longformer, Mistral): each query sees only the keys fewer than W "
    "positions away, a band along the diagonal of every self-attention map. 0: no window."
)


def window_value(prefix: str, max_len: int) -> int:
    """The sliding window's width W in session state (0: none), keyed prefix + "window", read before
    its widget is drawn; a link's W past the model's context is its context (the same attention: no
    query has more keys), said in a notice."""
    key = prefix + "window"
    if (asked := int(st.session_state.get(key, 0))) > max_len:
        link = md_code(f"{key.split('_', 1)[-1]}={asked}")
        st.info(
            f"{link} is past this model's {max_len} positions; showing {max_len}, the same attention "
            "as no window.",
            icon=":material/info:",
        )
        st.session_state[key] = max_len
    return int(st.session_state.get(key, 0))


def window_picker(where: Any, prefix: str, max_len: int, label: str = "Sliding window W") -> int:
    """The sliding window's widget (0: none), keyed prefix + "window"; call window_value first."""
    return int(where.number_input(label, 0, max_len, key=prefix + "window", persist_state="session",
                                  help=WINDOW_HELP))  # fmt: skip


def head_name(head: str) -> str:
    """ "1.2" as people read it: L1 H2."""
    return "L{} H{}".format(*head.split("."))


def ablation_picker(where: Any, prefix: str, n_layers: int, n_heads: int) -> tuple[str, ...]:
    """Heads to zero, as "layer.head"; heads a checkpoint switch no longer has are dropped first."""
    key = prefix + "ablate"
    heads = [f"{l}.{h}" for l in range(n_layers) for h in range(n_heads)]
    chosen = st.session_state.get(key, [])
    if any(a not in heads for a in chosen):  # only then: assigning sends the value over the user's
        st.session_state[key] = [a for a in chosen if a in heads]
    picked = where.multiselect(
        "Ablate heads",
        heads,
        key=key,
        persist_state="session",
        placeholder="none",
        format_func=head_name,
        help="Zero these heads' outputs; the weights are untouched.",
    )
    return tuple(picked)
