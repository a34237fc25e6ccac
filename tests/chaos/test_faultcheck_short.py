"""The fault check (tests/chaos/faultcheck.py) in its short form, as part of `make test`: faults at random times
into real runners, a private MariaDB and Redis, a Sentinel set and a Cluster. `make chaos` runs the long form (30
minutes, at least 500 faults).

The checker must find no violation of invariants 1 (an at-most-once job runs at most once), 2 (every run has its
attempt row) and 5 (a runner always ends). Invariants 3 (only the culprit is blamed), 4 (nothing stays stuck past
its bound) and 6 (waits bounded, one line) are held to RESIDUAL per 100 faults together: the long form
(`make chaos`, docs/RELIABILITY.md) is where they are held to zero, over more than 1,000 faults. This form runs once
per `make test`, on whatever else the machine does, and guards against a regression (a rate of one in a hundred
faults or more fails it). What it found that the long form had not (a claim that committed with its leases run out,
a runner that ended its window early when its workers kept dying; 2026-11-26) was explained from `--keep-data`
and fixed, each with a test of its own; since then it has found none in about 2,500 faults (twelve runs of
`faultcheck.py --short --phases main`). Printed in full either way, so the bar is stated, not lowered silently."""

import json
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


RESIDUAL = 1.0          # violations of invariants 3, 4 and 6 together, per 100 faults hit (the long form: 0)


def test_faultcheck_short_finds_no_violation_of_1_2_5_and_at_most_a_few_of_3_4_6():
    require("mysql")            # the Sentinel and Cluster worlds keep their tables on the shared MariaDB
    require("topology")         # redis-server and redis-cli: the private Redis, Sentinel set and Cluster
    for tool, how in TOOLS.items():
        if not (os.access(tool, os.X_OK) if tool.startswith("/") else shutil.which(tool)):
            pytest.fail(f"{tool} not found: {how}", pytrace=False)
    result = os.path.join(ROOT, "tests", "chaos", "results", "faultcheck-short.json")
    if os.path.exists(result):
        os.remove(result)                                    # only this run's judgment is read below
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "chaos", "faultcheck.py"), "--short"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    report = done.stdout[-6000:] + done.stderr[-2000:]
    assert done.returncode in (0, 1), report                 # 2: a server it needs could not be started
    assert os.path.exists(result), report
    with open(result) as f:
        total = json.load(f)["total"]
    by = {n: sum(1 for v in total["violations"] if v["invariant"] == n) for n in range(1, 7)}
    faults = sum(total["faults"].values())
    assert faults >= 300, report                             # the faults really hit live processes
    assert by[1] == by[2] == by[5] == 0, report
    assert by[3] + by[4] + by[6] <= RESIDUAL * faults / 100, report
    print(f"faultcheck short: {faults} faults; violations by invariant {by}")
