#!/usr/bin/env python3
"""Serve Prometheus metrics over HTTP: the same as `delayq metrics`. See --help."""
import _path  # noqa: F401  (delayq on the path, this folder off it)
from delayq.commands import run

raise SystemExit(run("metrics", prog="metrics.py"))
