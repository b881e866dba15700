#!/usr/bin/env bash
# Attention Lab for a class on one box: N app processes behind nginx, in the foreground.
#
#   bash deploy/serve.sh [--workers N] [--port P] [--address A] [--run-dir DIR] [--timeout S]
#                        [--metrics-port M]
#
# The same as `attention-lab serve ...` (the logic ships inside the package, in
# attention_lab/deploy/serve.py), run by $PYTHON (default python3): the interpreter with the
# app installed (pip install -e . in a checkout). See deploy/README.md and --help.
set -euo pipefail

if [[ -z "${PYTHON:-}" ]]; then
    PYTHON="$(command -v python3 || command -v python || true)"
    if [[ -z "$PYTHON" ]]; then
        echo "serve.sh: error: no python3 on PATH; set PYTHON=/path/to/python (the one with the app installed)" >&2
        exit 2
    fi
fi
if ! "$PYTHON" -c 'import attention_lab' 2>/dev/null; then
    echo "serve.sh: error: $PYTHON cannot import attention_lab. Install the app with it:" \
        "$PYTHON -m pip install -e $(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" >&2
    exit 2
fi
exec "$PYTHON" -m attention_lab serve "$@"
