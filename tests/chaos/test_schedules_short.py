"""Recurring schedules under three runners, one killed at a random moment of each pass (tests/chaos/
schedules_check.py), in a short form: make test runs it for 30 s on MariaDB + Redis and on MariaDB alone; the run of
record (5 minutes, docs/RELIABILITY.md) is part of `make chaos`. Every slot between the first and the last gets
exactly one job, none is missed, and every job ran and succeeded."""

import json
import subprocess
import sys

import pytest

from tests.conftest import REDIS_URL, ROOT, require


@pytest.mark.parametrize("redis", ["redis", "none"])
def test_three_runners_one_killed_each_pass_take_every_slot_once(redis):
    require("mysql")
    if redis == "redis":
        require("redis")
    done = subprocess.run([sys.executable, "-m", "tests.chaos.schedules_check", "--seconds", "30", "--step", "5",
                           "--redis", REDIS_URL if redis == "redis" else "none"],
                          cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    figures = json.loads(done.stdout.splitlines()[-1])
    print(json.dumps(figures, indent=1))
    assert figures["violations"] == [], figures
    assert figures["every-second"]["slots"] >= 25 and figures["kills"] >= 3, figures     # it ran, and it killed
