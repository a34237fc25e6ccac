#!/usr/bin/env python3
"""Pause a queue: the same as `delayq pause`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("pause", prog="pause.py"))
