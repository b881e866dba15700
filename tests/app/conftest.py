"""AppTest runs pages in this process: put app/ (for `lab`) on the import path."""

import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
if str(APP) not in sys.path:
    sys.path.insert(0, str(APP))
