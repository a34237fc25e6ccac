#!/usr/bin/env python3
"""Delete old finished jobs with their history: the same as `delayq purge`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("purge", prog="purge.py"))
