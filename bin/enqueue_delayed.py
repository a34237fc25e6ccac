#!/usr/bin/env python3
"""Schedule a delayed job. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.enqueue import main

sys.exit(main())
