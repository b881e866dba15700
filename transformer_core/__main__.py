import sys

from transformer_core.cli import main

sys.exit(main())
