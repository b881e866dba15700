"""What one person may hold on a shared box: trainings at once, uploaded corpora kept and
disk, checked by every run store before it accepts a run.

A person is whoever `RunRequest.owner` names: the signed-in account (st.login) or, on a box
without sign-in, the browser session (attention_lab.accounts.sign_in). Why per person as well as per box: one
student starting ten runs would otherwise fill the box's slots and disk for the whole class.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import attention_lab.serving.settings as settings
from attention_lab.serving.ids import RunError

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class PersonUsage:
    """What a person holds now: runs waiting or training, runs kept with an uploaded corpus,
    bytes of their runs' folders (or, on Redis, of their finished runs)."""

    active: int
    uploads: int
    bytes: int


@dataclass(frozen=True)
class PersonLimits:
    """ATTENTION_LAB_RUNS_PER_PERSON, ATTENTION_LAB_UPLOADS_PER_PERSON and
    ATTENTION_LAB_DISK_PER_PERSON_MB (see serving.settings)."""

    runs: int
    uploads: int
    bytes: int

    @classmethod
    def from_settings(cls) -> PersonLimits:
        return cls(
            settings.runs_per_person(), settings.uploads_per_person(), settings.disk_per_person_bytes()
        )


class PersonLimitError(RunError):
    """A run refused because it would pass one of its person's limits; `limit` names the setting."""

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


def check_person(usage: PersonUsage, limits: PersonLimits, *, uploading: bool) -> None:
    """Raise PersonLimitError saying which of the person's limits a new run would pass, and what to do."""
    if usage.active >= limits.runs:
        raise PersonLimitError(
            "ATTENTION_LAB_RUNS_PER_PERSON",
            f"You already have {usage.active} run(s) waiting or training; the limit per person is "
            f"{limits.runs}. Stop one or wait until one ends.",
        )
    if uploading and usage.uploads >= limits.uploads:
        raise PersonLimitError(
            "ATTENTION_LAB_UPLOADS_PER_PERSON",
            f"You keep {usage.uploads} run(s) trained on an uploaded corpus; the limit per person is "
            f"{limits.uploads}. Start this run on a built-in corpus, or ask the admin to raise "
            "ATTENTION_LAB_UPLOADS_PER_PERSON.",
        )
    if usage.bytes >= limits.bytes:
        raise PersonLimitError(
            "ATTENTION_LAB_DISK_PER_PERSON_MB",
            f"Your runs use {usage.bytes / 2**20:,.1f} MB of disk; the limit per person is "
            f"{limits.bytes / 2**20:,.0f} MB. Older runs are deleted as the box needs room; ask the admin "
            "to raise ATTENTION_LAB_DISK_PER_PERSON_MB.",
        )


def hold_to_limits(usage: Callable[[str], PersonUsage], owner: str, *, uploading: bool) -> None:
    """A store's check before it accepts a run from `owner` ("" from a script: no person);
    a refusal is logged with the person and the limit."""
    if not owner:
        return
    held = usage(owner)
    try:
        check_person(held, PersonLimits.from_settings(), uploading=uploading)
    except PersonLimitError as refusal:
        _LOG.warning(
            "run refused for %s: %s reached (%d waiting or training, %d uploads kept, %.1f MB)",
            owner, refusal.limit, held.active, held.uploads, held.bytes / 2**20,
        )  # fmt: skip
        raise
