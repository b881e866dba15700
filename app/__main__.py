"""`python -m attention_lab ...`: the `attention-lab` command (see attention_lab.cli)."""

import sys

from attention_lab.cli import main

sys.exit(main())
