#!/usr/bin/env python3
"""Run the due jobs (cron; --for 55 with bin/loop.sh): the same as `delayq run-due`. See --help."""
import signal

_early: list = []     # a SIGTERM that comes while Python is still importing: honoured, not fatal
signal.signal(signal.SIGTERM, lambda *_: _early.append(True))
# a supervisor that starts it with SIGTERM blocked loses no signal even in the interpreter's start-up: one that came
# then is pending, and is handled here (docs/RELIABILITY.md)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

import _path  # noqa: E402,F401  (delayq on the path, this folder off it)
from delayq.commands import run, run_due  # noqa: E402

run_due.STOP = _early
raise SystemExit(run("run-due", prog="run_due.py"))
