"""What installing the lab costs on disk: the wheel, a user's venv, a developer's venv.

    python benchmarks/bench_install.py [--keep DIR]

Builds the wheel from this checkout (`python -m build`: an sdist, then the wheel from it),
then makes two fresh venvs (no system site-packages) in a temporary folder:
- app: the wheel with its runtime dependencies only, pinned by constraints.txt, CPU torch
  (what `pip install attention-lab` gives a user);
- dev: `pip install -r requirements.txt` (the checkout, editable, with the `test` extra:
  pytest, Playwright, Hypothesis, ruff, the Redis queue, sign-in...), as README's commands do.
Prints the wheel's size, each venv's installed size (`du -sm`; torch's share), its number of
distributions and the seconds pip took, then what the dev venv adds. torch is pinned to
2.13.0, the CPU build from the local wheel folder of pip's config: an unpinned torch on
Linux is the multi-GB CUDA build.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints.txt"
TORCH = "torch==2.13.0"


def build_wheel(out: Path) -> Path:
    """The wheel, from an sdist of the checkout: nothing stale in build/ can reach it."""
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], check=True, capture_output=True
    )
    (wheel,) = out.glob("attention_lab-*.whl")
    return wheel


def make_venv(folder: Path, *requirements: str) -> float:
    """A fresh venv at `folder` with `requirements` (pip arguments) installed; returns pip's seconds."""
    venv.EnvBuilder(with_pip=True, clear=True).create(folder)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    started = time.monotonic()
    done = subprocess.run(
        [str(folder / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q",
         *requirements],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode:
        sys.exit(f"pip install {' '.join(requirements)} failed:\n{done.stdout}{done.stderr}")
    return time.monotonic() - started


def megabytes(path: Path) -> int:
    return int(subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True).stdout.split()[0])


def distributions(folder: Path) -> dict[str, str]:
    """name -> version of every distribution in the venv (pip and setuptools included)."""
    listed = subprocess.run(
        [str(folder / "bin" / "python"), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(listed)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="build in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-install-") as scratch:
        base = args.keep or Path(scratch)
        base.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        wheel = build_wheel(base / "dist")
        took = time.monotonic() - started
        print(f"wheel      {wheel.name}: {wheel.stat().st_size / 1e6:.1f} MB ({took:.0f} s)")
        venvs = {
            "app": (base / "app-venv", ("-c", str(CONSTRAINTS), str(wheel), TORCH)),
            "dev": (base / "dev-venv", ("-r", str(ROOT / "requirements.txt"), TORCH)),
        }
        found: dict[str, dict[str, str]] = {}
        for name, (folder, requirements) in venvs.items():
            seconds = make_venv(folder, *requirements)
            found[name] = distributions(folder)
            (torch,) = folder.glob("lib/python*/site-packages/torch")
            print(
                f"{name} venv   {megabytes(folder):>5} MB installed ({megabytes(torch)} MB of it torch "
                f"{found[name].get('torch')}), {len(found[name])} distributions (pip: {seconds:.0f} s)"
            )
        extra = sorted(set(found["dev"]) - set(found["app"]) - {"attention-lab"})
        print(f"dev adds   {len(extra)}: {', '.join(extra)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
