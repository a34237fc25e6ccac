#!/usr/bin/env python3
"""Cancel pending jobs by business key or id. See --help."""
import sys

import _boot  # noqa: F401  (venv and lib/ on the path)
from delayq.commands.cancel import main

sys.exit(main())
