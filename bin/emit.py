#!/usr/bin/env python3
"""Emit an event: one job per handler: the same as `delayq emit`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("emit", prog="emit.py"))
