#!/usr/bin/env python3
"""The recurring schedules: the same as `delayq schedules`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("schedules", prog="schedules.py"))
