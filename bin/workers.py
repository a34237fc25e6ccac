#!/usr/bin/env python3
"""List the runners that beat: the same as `delayq workers`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("workers", prog="workers.py"))
