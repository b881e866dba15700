"""Before upgrading Streamlit: which of its internals the lab uses moved, and do the class tests pass.

    python benchmarks/streamlit_upgrade_check.py [--spec streamlit] [--check-only] [--isolated]
                                                 [--venv DIR] [--tests PATH ...]

The lecture's push and mirrors use private parts of Streamlit (attention_lab.frame.streamlit_private
lists and checks them; where one is missing the app still works, with followers polling), and the
pages' styles and scripts find Streamlit's elements by hooks (attention_lab.frame.streamlit_dom). This
script makes a scratch virtual environment in a temporary folder, installs the Streamlit asked
for (`--spec`, default: the newest) into it, prints what the adapter's check finds there (the
parts that moved), then runs the classroom tests with that interpreter and exits with their
status.

By default the environment sees this interpreter's packages (`--system-site-packages`: torch,
Playwright and the test tools are not downloaded again) and the new Streamlit, with whatever
newer packages it asks for, is installed into the environment itself, so it shadows the one
installed here; the project is importable from it as installed here (else it is installed
with `pip install --no-deps -e <repo>`). `--isolated`: a bare environment, the project's
runtime dependencies and test tools installed into it too (torch included: large).
Nothing outside the temporary folder is changed; `--venv DIR` keeps the environment there.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CLASS_TESTS = (
    "tests/app/test_streamlit_private.py",
    "tests/app/test_streamlit_dom.py",
    "tests/browser/test_streamlit_dom.py",
    "tests/app/test_class_push.py",
    "tests/app/test_class_mirror.py",
    "tests/app/test_classroom.py",
    "tests/deploy/test_private_fallback.py",
    "tests/deploy/test_class_mirror.py",
    "tests/deploy/test_class_session.py",
)
TEST_TOOLS = ("pytest", "playwright", "websockets", "pillow")  # what the class tests import beside the app
# Run in the environment: the adapter's check, as JSON (no caching, no warning).
CHECK = """
import json
from attention_lab.frame import streamlit_dom, streamlit_private as private
found = private.probe_all()
print(json.dumps({"streamlit": found.streamlit, "missing": list(found.missing),
                  "parts": list(private.PARTS), "from": str(private.frontend_build().parent),
                  "dom_missing": streamlit_dom.missing(), "dom_parts": len(streamlit_dom.PARTS)}))
"""


def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """`command`, echoed first; raises where it fails."""
    print("$", " ".join(command), flush=True)
    return subprocess.run(command, check=True, text=True, **kwargs)


def pip_env() -> dict[str, str]:
    """This environment without a constraint that pins Streamlit (the point is a newer one)."""
    return {k: v for k, v in os.environ.items() if k not in ("PIP_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV")}


def runtime_requirements(spec: str) -> list[str]:
    """The project's runtime dependencies (pyproject.toml), its Streamlit requirement replaced by `spec`."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = [d for d in project["dependencies"] if re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0] != "streamlit"]
    return [spec, *deps]


def make_venv(folder: Path, spec: str, isolated: bool) -> Path:
    """A virtual environment in `folder` with `spec` installed into it; returns its python."""
    flags = [] if isolated else ["--system-site-packages"]
    run([sys.executable, "-m", "venv", *flags, str(folder)])
    python = folder / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    started = time.monotonic()
    if isolated:
        run([*pip, "--upgrade", *runtime_requirements(spec), *TEST_TOOLS], env=pip_env())
    else:  # a newer Streamlit goes into the environment, shadowing the one installed here
        run([*pip, "--upgrade", spec], env=pip_env())
    found = subprocess.run([str(python), "-c", "import attention_lab"], capture_output=True, cwd=folder)
    if found.returncode != 0:
        run([*pip, "--no-deps", "-e", str(ROOT)], env=pip_env())
    print(f"installed in {time.monotonic() - started:.0f} s", flush=True)
    return python


def check_in(python: Path) -> dict[str, Any]:
    """The adapter's check run by `python` (outside the repo, so the installed project is used)."""
    out = run([str(python), "-c", CHECK], capture_output=True, cwd=tempfile.gettempdir()).stdout
    return json.loads(out.strip().splitlines()[-1])


def report(found: dict[str, Any]) -> None:
    """Which internals moved: each part the adapter guards, and whether the new Streamlit has it."""
    missing, parts = list(found["missing"]), list(found["parts"])
    here = importlib.metadata.version("streamlit")
    print(f"\nStreamlit here: {here}; in the scratch environment: {found['streamlit']} ({found['from']})")
    for part in parts:
        print(f"  {'MOVED' if part in missing else 'ok   '}  {part}")
    if missing:
        print(f"{len(missing)} of {len(parts)} internals moved: the push and mirrors would be off.")
        print("Followers would poll every 2 s. Update app/frame/streamlit_private.py before upgrading.")
    else:
        print(f"All {len(parts)} internals are where the lab expects them.")
    for hook in found["dom_missing"]:
        print(f"  MOVED  page hook {hook}")
    if found["dom_missing"]:
        print("The pages' styles and scripts would miss these elements: update app/static/streamlit_dom.js.")
    else:
        print(f"All {found['dom_parts']} page hooks (app/static/streamlit_dom.js) are in its frontend.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--spec", default="streamlit", help="pip requirement (default: the newest streamlit)")
    parser.add_argument("--check-only", action="store_true", help="print what moved; run no tests")
    parser.add_argument("--isolated", action="store_true", help="a bare environment (downloads torch)")
    parser.add_argument("--venv", type=Path, help="make (and keep) the environment here")
    parser.add_argument("--tests", nargs="+", default=list(CLASS_TESTS), help="test paths to run")
    args = parser.parse_args()

    scratch = None if args.venv else tempfile.TemporaryDirectory(prefix="streamlit-upgrade-")
    folder = args.venv if scratch is None else Path(scratch.name) / "venv"
    try:
        python = make_venv(folder, args.spec, args.isolated)
        report(check_in(python))
        if args.check_only:
            return 0
        return subprocess.run([str(python), "-m", "pytest", "-q", *args.tests], cwd=ROOT).returncode
    finally:
        if scratch is not None:
            scratch.cleanup()


if __name__ == "__main__":
    sys.exit(main())
