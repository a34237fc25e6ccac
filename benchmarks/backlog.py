"""Backlog (issue 5, part 4) alone: the burst with and without 1,000,000 jobs pending in the future, 3 runs each.

    .venv/bin/python benchmarks/backlog.py     # BENCH_N=20000, BENCH_BACKLOG=1000000, BENCH_RUNS=3

`make bench` runs the same as one section of the full table; this is the quick way to get its medians.
"""

from __future__ import annotations

import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import delayq_side as D  # noqa: E402
from tests.chaos.servers import PrivateRedis  # noqa: E402

N = int(os.environ.get("BENCH_N", "20000"))
BACKLOG = int(os.environ.get("BENCH_BACKLOG", "1000000"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")


def main() -> None:
    redis = PrivateRedis()
    try:
        empty, backlog, rebuild = [], [], []
        for _ in range(RUNS):
            empty.append(D.burst(MYSQL, redis.url, N)["jobs_per_s"])
            run = D.burst(MYSQL, redis.url, N, backlog=BACKLOG)
            backlog.append(run["jobs_per_s"])
            rebuild.append(run["rebuild_seconds"])
            print(f"run: empty {empty[-1]} jobs/s, with backlog {backlog[-1]} jobs/s, rebuild {rebuild[-1]} s", flush=True)
    finally:
        redis.stop()
    e, b = statistics.median(empty), statistics.median(backlog)
    print(f"burst of {N}: empty {e} jobs/s, with {BACKLOG:,} pending {b} jobs/s ({(e - b) / e:+.1%} slower); "
          f"rebuild of the backlog {statistics.median(rebuild)} s (medians of {RUNS})")


if __name__ == "__main__":
    main()
