"""The store on a three-node Galera cluster with one node killed and brought back (tests/chaos/galera_check.py), in
a short form: 300 jobs due over 12 s, three runners each pointed at a different node first, node 1 SIGKILLed 3 s
in and started again 4 s later. No job lost, no at-most-once job run twice, every run with its attempt row, the
three nodes holding the same rows. The run of record (3,000 jobs, docs/RELIABILITY.md) is part of `make chaos`."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.chaos.galera import PROVIDER
from tests.conftest import ROOT


def test_a_node_killed_and_restarted_under_three_runners_loses_nothing_and_runs_nothing_twice():
    if not os.path.exists(PROVIDER) or not shutil.which("rsync"):
        pytest.fail(f"galera-4 ({PROVIDER}) and rsync are needed: apt-get install galera-4 rsync "
                    "(or run `make test`, which installs them)", pytrace=False)
    done = subprocess.run([sys.executable, "-m", "tests.chaos.galera_check", "--jobs", "300", "--span", "12",
                           "--kill-at", "3", "--down", "4"], cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    figures = json.loads(done.stdout.splitlines()[-1])
    print(done.stdout)
    assert figures["violations"] == [], figures
    assert figures["lost"] == 0 and figures["at_most_once_ran_twice"] == 0, figures
    # (an enqueue whose reply the kill cut is in the table or not: the client was told it may be either)
    assert figures["enqueued"] + figures["producer_unknown"] == 300, figures
    assert figures["enqueued"] <= figures["rows"] <= 300 and figures["nodes_identical"], figures
    assert figures["synced_after_s"] > 0 and figures["killed_at_s"] < figures["last_start_s"], figures  # mid-run
