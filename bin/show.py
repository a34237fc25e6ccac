#!/usr/bin/env python3
"""Show a job and its attempts. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.show import main

sys.exit(main())
