#!/usr/bin/env python3
"""Run the due jobs. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.run_due import main

sys.exit(main())
