#!/usr/bin/env python3
"""Show jobs with their attempts and steps: the same as `delayq show`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("show", prog="show.py"))
