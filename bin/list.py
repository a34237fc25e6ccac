#!/usr/bin/env python3
"""List jobs, newest first: the same as `delayq list`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("list", prog="list.py"))
