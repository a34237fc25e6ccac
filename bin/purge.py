#!/usr/bin/env python3
"""Delete old finished jobs. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.purge import main

sys.exit(main())
