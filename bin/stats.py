#!/usr/bin/env python3
"""Per-queue statistics for operators. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.stats import main

sys.exit(main())
