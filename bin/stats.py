#!/usr/bin/env python3
"""Per-queue statistics: table, JSON or Prometheus textfile: the same as `delayq stats`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("stats", prog="stats.py"))
