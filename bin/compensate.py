#!/usr/bin/env python3
"""Recover lost jobs, rebuild the due index, send alerts. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.compensate import main

sys.exit(main())
