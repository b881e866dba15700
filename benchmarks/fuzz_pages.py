"""Property-based fuzzing of every page (issue 27 #1): random links and typed text through
Streamlit's AppTest, checked for the properties of attention_lab.testing.fuzz (no exception, every
value a page did not keep named in a notice, the URL afterwards holding only accepted values).

    python benchmarks/fuzz_pages.py [PAGE ...] [--cases 20000] [--seed 0]

The cases are split evenly over the pages named (default: all); each page prints its cases,
failures (the smallest few examples found) and time. tests/app/test_fuzz_pages.py runs a few
cases per page in CI.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
from hypothesis import HealthCheck, Phase, given, seed, settings

from attention_lab.testing import fuzz

SHOWN = 3  # failing examples printed per page


def fuzz_page(page: str, cases: int, at_seed: int) -> tuple[int, list[tuple[dict[str, str], list[str]]]]:
    """(cases run, failing (link, problems)) of `cases` random links to the page."""
    failures: list[tuple[dict[str, str], list[str]]] = []
    ran = 0

    @seed(at_seed)
    @settings(
        max_examples=cases,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.generate,),
    )
    @given(params=fuzz.links(page))
    def check(params: dict[str, str]) -> None:
        nonlocal ran
        ran += 1
        problems = fuzz.link_problems(page, params, fuzz.open_page(page, params))
        if problems:
            failures.append((params, problems))

    fuzz.page_keys(page)
    check()
    return ran, failures


def shortened(params: dict[str, str], width: int = 40) -> str:
    """Every key of a failing link, each long value cut to `width` characters with its length."""
    return repr({k: v if len(v) <= width else f"{v[:width]}…({len(v)} chars)" for k, v in params.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", metavar="PAGE", help=f"any of {', '.join(fuzz.PAGES)}")
    parser.add_argument("--cases", type=int, default=20_000, help="in total, over all pages named")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    unknown = set(args.pages) - set(fuzz.PAGES)
    if unknown:
        parser.error(f"unknown page(s) {sorted(unknown)}; known: {list(fuzz.PAGES)}")
    os.environ.setdefault("ATTENTION_LAB_DEVICE", "cpu")
    torch.set_num_threads(1)
    pages = args.pages or list(fuzz.PAGES)
    per_page = max(1, args.cases // len(pages))
    print(f"{'page':<11}{'cases':>7}{'failures':>10}{'seconds':>9}")
    total = failed = 0
    for page in pages:
        start = time.perf_counter()
        ran, failures = fuzz_page(page, per_page, args.seed)
        total, failed = total + ran, failed + len(failures)
        print(f"/{page:<10}{ran:>7}{len(failures):>10}{time.perf_counter() - start:>9.0f}", flush=True)
        for params, problems in sorted(failures, key=lambda f: len(repr(f[0])))[:SHOWN]:
            print(f"    {shortened(params)}\n      -> {'; '.join(problems):.600}")
    print(f"all pages: {total} cases, {failed} failing")


if __name__ == "__main__":
    main()
