#!/usr/bin/env python3
"""Resume a paused queue: the same as `delayq resume`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("resume", prog="resume.py"))
