"""One cached-compute helper for every page: results keyed by the weights, not by names.

`run_cached(fn, checkpoint_name, *args)` loads the checkpoint (shipped name or run id, via
`attention_lab.models.resources.load_model`) and returns `fn(ckpt, *args)` from a bounded st.cache_data
cache keyed by
- fn (module + qualified name),
- the weights' sha256 (`ckpt.meta["weights_sha256"]`; computed from the tensors when a
  checkpoint has none), so shipped and trained models share one rule and two users with
  the same weights share one entry, while a reused name or object id never serves stale
  results,
- the device the model lives on,
- args, canonicalised: dataclasses such as InferenceOptions (every field, scale_scores
  and sliding_window included), sets in sorted order, tuples and lists element by element.

`shared_cache(fn)` caches a pure function by its arguments (a chart builder, a lesson's numbers):
one result serves every run and user, read-only.

Why: one home for caching, so no page keeps its own copy of the options or its own memo.
fn must be a module-level pure function `fn(ckpt: Checkpoint, *args)` whose result
depends only on the weights and args; results are returned as stored (st.cache_data
hands each caller its own copy), so callers may not rely on identity.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import streamlit as st
import torch

from attention_lab.models.resources import load_model
from transformer_core.io import Checkpoint

CACHE_ENTRIES = 64
R = TypeVar("R")


def canonical(value: Any) -> Any:
    """A hashable, order-independent description of one argument (what the cache keys on).

    Raises TypeError for values whose identity cannot be described (models, tensors),
    so a wrong argument fails loudly instead of caching by accident.
    """
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, enum.Enum):
        return (type(value).__qualname__, value.name)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = tuple((f.name, canonical(getattr(value, f.name))) for f in dataclasses.fields(value))
        return (type(value).__module__ + "." + type(value).__qualname__, fields)
    if isinstance(value, (set, frozenset)):
        return ("set", tuple(sorted((canonical(v) for v in value), key=repr)))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(canonical(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted(((canonical(k), canonical(v)) for k, v in value.items()), key=repr)))
    if isinstance(value, np.ndarray) and value.size <= 4096:
        return ("ndarray", value.dtype.str, value.shape, hashlib.sha256(value.tobytes()).hexdigest())
    raise TypeError(f"run_cached: cannot key the cache on a {type(value).__name__}")


def weights_sha256(ckpt: Checkpoint) -> str:
    """The checkpoint's weights checksum; for an in-memory model, one computed from its tensors."""
    sha = ckpt.meta.get("weights_sha256")
    if sha:
        return str(sha)
    digest = hashlib.sha256()
    for name, tensor in sorted(ckpt.model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().contiguous().numpy().tobytes())
    return "tensors:" + digest.hexdigest()


def model_device(ckpt: Checkpoint) -> str:
    param = next(ckpt.model.parameters(), None)
    return str(param.device if param is not None else torch.device("cpu"))


@st.cache_data(max_entries=CACHE_ENTRIES, show_spinner=False)
def _cached(
    fn_name: str,
    sha: str,
    device: str,
    key: str,
    _fn: Callable[..., Any],
    _ckpt: Checkpoint,
    _args: tuple[Any, ...],
) -> Any:
    return _fn(_ckpt, *_args)


def _identity(fn: Callable[..., Any], ckpt: Checkpoint) -> dict[str, str]:
    """What a result is keyed on besides its arguments: the function, the weights, the device.
    Passed by name: Streamlit looks each positional argument's name up in the signature on
    every call."""
    return {
        "fn_name": f"{fn.__module__}.{fn.__qualname__}",
        "sha": weights_sha256(ckpt),
        "device": model_device(ckpt),
    }


def cached_call(fn: Callable[..., R], ckpt: Checkpoint, *args: Any) -> R:
    """`fn(ckpt, *args)` through the same cache, for code that already holds the checkpoint
    (a cached function building on another one's result)."""
    return _cached(**_identity(fn, ckpt), key=repr(canonical(args)), _fn=fn, _ckpt=ckpt, _args=args)


def run_cached(fn: Callable[..., R], checkpoint_name: str, *args: Any) -> R:
    """`fn(load_model(checkpoint_name), *args)`, computed once per (fn, weights, device, args).

    Raises what load_model raises for an unknown name (CheckpointError) and whatever fn
    raises (nothing is cached then).
    """
    return cached_call(fn, load_model(checkpoint_name), *args)


@st.cache_resource(max_entries=CACHE_ENTRIES, show_spinner=False)
def _shared(
    fn_name: str, sha: str, device: str, key: str, _fn: Callable[..., Any], _ckpt: Checkpoint, _request: Any
) -> Any:
    return _fn(_ckpt, _request)


def view_cached(fn: Callable[[Checkpoint, Any], R], checkpoint_name: str, request: Any) -> R:
    """A page's view, `fn(load_model(checkpoint_name), request)` (attention_lab.viewmodel),
    computed once per (fn, weights, device, request) and shared read-only by every run and
    user: no copy per caller, unlike run_cached, since a view is large and never mutated."""
    ckpt = load_model(checkpoint_name)
    key = repr(canonical(request))
    return _shared(**_identity(fn, ckpt), key=key, _fn=fn, _ckpt=ckpt, _request=request)


def shared_cache(fn: Callable[..., R], max_entries: int = CACHE_ENTRIES) -> Callable[..., R]:
    """`fn`, a pure function (a chart builder, a lesson's numbers), cached by its arguments: one
    result, treated as read-only, serves every run and user (no copy per caller)."""
    cached = st.cache_resource(max_entries=max_entries, show_spinner=False)(fn)
    params = list(inspect.signature(fn).parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY) for p in params):
        raise TypeError(f"shared_cache: {fn.__qualname__} must take its arguments by name")
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    order = [p.name for p in params]

    @functools.wraps(fn)
    def by_name(*args: Any, **kwargs: Any) -> R:
        """Every argument by name, defaults filled in, in the signature's order: one cache entry
        however a call spells them (Streamlit keys on them as passed, and looks each positional
        one's name up in the signature on every call)."""
        if len(args) > len(positional):
            raise TypeError(f"{fn.__qualname__}() takes {len(positional)} positional arguments")
        given = {**defaults, **dict(zip(positional, args, strict=False)), **kwargs}
        ordered = {name: given.pop(name) for name in order if name in given}
        return cached(**ordered, **given)  # what is left: names fn does not take, which it refuses

    return by_name
