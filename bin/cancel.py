#!/usr/bin/env python3
"""Cancel pending jobs by business key or id: the same as `delayq cancel`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("cancel", prog="cancel.py"))
