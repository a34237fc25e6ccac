"""Rate and concurrency limits under three real runners (tests/chaos/limits_check.py) in a short form: 20 s of a
queue with `rate: 10/s` (190-210 started, no sliding second over 12), and 300 jobs of one running job per order
with one runner killed whole mid-run (no two runs of an order overlap; a killed holder's order starts again
within its 5 s lease). The full form (60 s, 2,000 jobs) is in `make chaos` and docs/RELIABILITY.md."""

import json
import subprocess
import sys

from tests.conftest import REDIS_URL, ROOT, require


def test_a_rate_and_a_per_order_key_hold_across_three_runners_one_killed():
    require("mysql")
    require("redis")
    done = subprocess.run([sys.executable, "-m", "tests.chaos.limits_check", "--short", "--redis", REDIS_URL],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    figures = json.loads(done.stdout.splitlines()[-1])
    print(json.dumps(figures, indent=1))
    assert figures["rate"]["ok"] and figures["rate"]["busiest_second"] <= 12, figures["rate"]
    assert figures["key"]["ok"] and figures["key"]["overlaps"] == 0, figures["key"]
    assert figures["key"]["holders_killed"] >= 1, figures["key"]        # the kill hit a holder: the lease path ran
