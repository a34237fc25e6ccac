#!/usr/bin/env python3
"""Serve the web dashboard: the same as `delayq web`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("web", prog="web.py"))
