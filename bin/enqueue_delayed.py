#!/usr/bin/env python3
"""Schedule a delayed job, or many from a JSON-lines file: the same as `delayq enqueue`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("enqueue", prog="enqueue_delayed.py"))
