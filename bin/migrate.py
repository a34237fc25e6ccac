#!/usr/bin/env python3
"""Create or upgrade the tables: the same as `delayq migrate`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("migrate", prog="migrate.py"))
