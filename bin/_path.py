"""Shared start of every bin/ script: find delayq, and keep this folder off the import path.

The scripts run under the interpreter that invokes them (the application's virtualenv,
so that jobs import the application's own packages): delayq comes from that
interpreter's installed packages, or else from this checkout's lib/. This folder is
taken off sys.path, so its script names (retry.py, list.py, ...) shadow nothing the
jobs import; the application's own directories follow the installed packages
(DELAYQ_APP_PATH, default the working directory).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
try:
    import delayq  # noqa: F401
except ImportError:
    sys.path.append(os.path.join(os.path.dirname(HERE), "lib"))
