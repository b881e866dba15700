"""The documentation's examples run: every block titled "example" (```bash title="example"``` or
```python title="example"```) in README.md and docs/ is run as a reader would run it, a
`--json` command prints exactly one JSON object, and where an "output shape" block follows,
the output's shape (keys and types, docs/gen/shapes.py) is the one shown."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from tests.docs.docs_support import ROOT, Example, examples, shapes

EXAMPLES = examples()
ENV = {**os.environ, "ATTENTION_LAB_DEVICE": "cpu", "OMP_NUM_THREADS": "1"}


def argv(line: str) -> list[str]:
    """A documented command line as this test runs it: `python` is this interpreter and
    `attention-lab` the installed command (or `python -m attention_lab`)."""
    words = shlex.split(line)
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    if words[0] == "attention-lab":
        here = shutil.which("attention-lab", path=os.path.dirname(sys.executable)) or shutil.which(
            "attention-lab"
        )
        return [here, *words[1:]] if here else [sys.executable, "-m", "attention_lab", *words[1:]]
    raise AssertionError(f"an example runs `python ...` or `attention-lab ...`, not {words[0]!r}")


def test_the_docs_have_examples() -> None:
    assert len(EXAMPLES) >= 5
    assert sum(e.shape is not None for e in EXAMPLES) >= 3


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.block.where for e in EXAMPLES])
def test_an_example_runs_and_prints_the_shape_shown(example: Example) -> None:
    block = example.block
    if block.language == "python":
        commands = [[sys.executable, "-c", block.body]]
    else:
        assert block.language == "bash", block.where
        commands = [
            argv(line) for line in block.body.splitlines() if line.strip() and not line.startswith("#")
        ]
    for command in commands:
        done = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{block.where}: {done.stderr[-3000:]}"
        if "--json" in command:
            value = json.loads(done.stdout)  # exactly one JSON value: anything else there fails
            assert isinstance(value, dict), block.where
            if example.shape is not None:
                assert shapes.shape(value) == json.loads(example.shape.body), (
                    f"{block.where}: the output's shape is now\n{shapes.render(shapes.shape(value))}"
                )
        else:
            assert example.shape is None, f"{example.shape.where}: a shape needs a --json command"
