"""The one place a device is chosen."""

from __future__ import annotations

import functools
import os

import torch
from threadpoolctl import ThreadpoolController

from transformer_core.errors import ConfigError

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def resolve_device(choice: str = "auto") -> torch.device:
    """'auto' = CUDA when available, else CPU; 'cuda' without a GPU is a clear error."""
    if choice not in DEVICE_CHOICES:
        raise ConfigError(f"device: {choice!r} is not one of {DEVICE_CHOICES}")
    if choice == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: 'cuda' was asked for but no CUDA GPU is available")
    return torch.device(choice)


@functools.cache
def _blas_pools() -> ThreadpoolController:
    """The BLAS libraries loaded in this process (numpy's, which torch has imported by now):
    found once, since looking them up costs a scan of every loaded library."""
    return ThreadpoolController().select(user_api="blas")


def set_cpu_threads(threads: int) -> None:
    """Threads per CPU operation, torch's and numpy's BLAS alike (the numpy decoding step's
    matrix products): on a shared box one operation must not take every core. Cheap when
    nothing changes, so a page run may call it every time."""
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    blas = _blas_pools()
    if any(pool.num_threads != threads for pool in blas.lib_controllers):
        blas.limit(limits=threads)


def resolve_device_before_fork(choice: str = "auto") -> torch.device:
    """resolve_device for a process that forks children which use the device (an RQ worker
    and its work horses): CUDA is asked through NVML, because the CUDA runtime's own check
    would leave every forked child unable to initialise CUDA."""
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    return resolve_device(choice)


def rank_device(choice: str, local_rank: int) -> torch.device:
    """This torchrun process's device: CPU, or GPU `local_rank` made current, so that a
    plain 'cuda' (resolve_device) also means this rank's GPU from here on."""
    device = resolve_device(choice)
    if device.type != "cuda":
        return device
    if local_rank >= torch.cuda.device_count():
        raise ConfigError(
            f"device: local rank {local_rank} has no GPU ({torch.cuda.device_count()} visible); "
            "start at most one process per GPU"
        )
    device = torch.device("cuda", local_rank)
    torch.cuda.set_device(device)
    return device


def describe_device(device: torch.device) -> str:
    """'CPU, 2 threads' ('CPU, 1 thread') or 'CUDA: NVIDIA H100 (80 GiB)'."""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return f"CUDA: {props.name} ({props.total_memory / 2**30:.0f} GiB)"
    threads = torch.get_num_threads()
    return f"CPU, {threads} thread{'' if threads == 1 else 's'}"


def limit_process_memory(device: torch.device, fraction: float) -> bool:
    """Cap this process's share of an accelerator's memory (a training run's worker calls
    it before building its model), so one run can never starve serving or other runs.
    Returns True when a cap was set; CPU devices have none. An allocation beyond the cap
    raises torch.cuda.OutOfMemoryError in this process only."""
    if not 0 < fraction <= 1:
        raise ConfigError(f"memory fraction: must be in (0, 1], got {fraction}")
    if device.type != "cuda":
        return False
    torch.cuda.set_per_process_memory_fraction(fraction, device)
    return True


def release_memory(device: torch.device) -> None:
    """Give cached accelerator memory back to the device (after a run ends or fails)."""
    if device.type == "cuda":
        torch.cuda.empty_cache()


def memory_in_use(device: torch.device) -> int | None:
    """Bytes of accelerator memory this process holds on `device` (its caching allocator's
    reservation); None for a device with no memory of its own to report (CPU)."""
    if device.type == "cuda":
        return int(torch.cuda.memory_reserved(device))
    return None
