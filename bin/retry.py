#!/usr/bin/env python3
"""Re-run failed jobs or steps: the same as `delayq retry`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("retry", prog="retry.py"))
