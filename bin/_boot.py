"""Shared start of every bin/ script: use the project's .venv when there is one, find lib/.

Cron runs scripts with a bare environment; re-executing under .venv/bin/python
means `bin/run_due.py` works from a crontab line with no activation step. The
working directory goes on sys.path so the app's own job modules can be named
(only those under DELAYQ_ALLOWED_MODULES ever run).
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")

if os.path.exists(VENV_PYTHON) and os.path.realpath(sys.prefix) != os.path.realpath(os.path.join(ROOT, ".venv")) \
        and not os.environ.get("DELAYQ_NO_VENV"):
    os.execv(VENV_PYTHON, [VENV_PYTHON, *sys.argv])

sys.path.insert(0, os.path.join(ROOT, "lib"))
sys.path.insert(1, os.getcwd())
