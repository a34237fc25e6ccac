#!/usr/bin/env python3
"""Create or upgrade the tables. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.migrate import main

sys.exit(main())
