#!/usr/bin/env python3
"""Recover jobs of vanished runners, rebuild the due index, send alerts (cron, each minute): the same as `delayq compensate`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("compensate", prog="compensate.py"))
