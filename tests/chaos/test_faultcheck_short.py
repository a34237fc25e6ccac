"""The fault check (tests/chaos/faultcheck.py) in its short form, as part of `make test`: faults at random times
into real runners, a private MariaDB and Redis, a Sentinel set and a Cluster; the checker must find no violation
of issue 21's invariants 1-6. `make chaos` runs the long form (30 minutes, at least 500 faults)."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT, require

TOOLS = {
    "mariadb-install-db": "MariaDB's server tools are needed for a private server: apt-get install mariadb-server "
                          "(`make test` installs it)",
    "mariadb": "the mariadb client is needed to create the private server's database: apt-get install mariadb-client",
    "/usr/sbin/mariadbd": "/usr/sbin/mariadbd is needed for a private server: apt-get install mariadb-server",
}


def test_faultcheck_short_finds_no_violation():
    require("mysql")            # the Sentinel and Cluster worlds keep their tables on the shared MariaDB
    require("topology")         # redis-server and redis-cli: the private Redis, Sentinel set and Cluster
    for tool, how in TOOLS.items():
        if not (os.access(tool, os.X_OK) if tool.startswith("/") else shutil.which(tool)):
            pytest.fail(f"{tool} not found: {how}", pytrace=False)
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "chaos", "faultcheck.py"), "--short"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
