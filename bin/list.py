#!/usr/bin/env python3
"""List jobs, newest first. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.list import main

sys.exit(main())
