#!/usr/bin/env python3
"""Run the due jobs (cron; --for 55 with bin/loop.sh): the same as `delayq run-due`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("run-due", prog="run_due.py"))
