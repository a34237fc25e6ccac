#!/usr/bin/env python3
"""Re-run a failed job or step by hand. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.retry import main

sys.exit(main())
