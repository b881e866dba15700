"""Settings for the whole suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import torch

if TYPE_CHECKING:
    from playwright.sync_api import Browser

# The models here are tiny: one intra-op thread is fastest, and it avoids OpenMP threads
# spinning against each other on a busy 2-core machine (100x slowdowns were measured).
torch.set_num_threads(1)


@pytest.fixture(autouse=True, scope="session")
def _runs_in_a_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Runs any test trains (and their queue) go to a temporary folder, never <repo>/runs,
    and never pause for the CPU."""
    patch = pytest.MonkeyPatch()
    patch.setenv("ATTENTION_LAB_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
    # The suite's own browser and servers keep a 2-core machine's CPUs full: runs that paused
    # for them (serving.priority.CpuPressure, tested on its own) would only make the tests slow.
    patch.setenv("ATTENTION_LAB_RUN_YIELD", "0")
    yield
    patch.undo()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One headless Chromium for every browser test (tests/browser, tests/deploy, tests/serving):
    Playwright's sync API keeps an event loop on the main thread while it lives, so there is
    only one. Playwright is imported here, when a test asks for a browser: the library's tests
    need no browser package."""
    from playwright.sync_api import sync_playwright

    from attention_lab.testing.chromium import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
