"""The chaos scenarios at short scale, as part of `make test` (the full scale is `make chaos`)."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, require


def test_chaos_short_keeps_every_promise():
    require("mysql")
    require("redis")
    require("topology")
    if not shutil.which("faketime"):
        pytest.fail("faketime (libfaketime) is needed: apt-get install faketime (`make test` installs it)",
                    pytrace=False)
    env = dict(os.environ, CHAOS_SCALE="short")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "chaos", "chaos.py")], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "every promise kept" in done.stdout
