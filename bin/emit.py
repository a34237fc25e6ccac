#!/usr/bin/env python3
"""Emit an event: one job per handler. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.emit import main

sys.exit(main())
