"""Where a runner's time goes per job: each phase of a pass timed in-process (no pipelining).

    .venv/bin/python benchmarks/phases.py          # BENCH_N=20000 no-op jobs, MySQL + Redis, batches of 500
"""

from __future__ import annotations

import os
import sys
import time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]

from delayq_side import BATCH, NOOP, World  # noqa: E402
from delayq.runner import Runner  # noqa: E402

N = int(os.environ.get("BENCH_N", "20000"))
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REDIS = os.environ.get("DELAYQ_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")


def timed(totals: dict, obj: object, name: str, label: str) -> None:
    inner = getattr(obj, name)

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            totals[label] += time.perf_counter() - t0

    setattr(obj, name, wrapper)


def main() -> None:
    w = World(MYSQL, REDIS)
    try:
        w.q.enqueue_many({"call": NOOP} for _ in range(N))
        totals: dict[str, float] = defaultdict(float)
        runner = Runner(w.q, ["default"], BATCH)
        for obj, name, label in ((w.q.index, "claim", "claim (Lua)"), (w.q.store, "start", "start: UPDATE + read back"),
                                 (runner, "execute", "run the job (Python)"), (w.q.store, "finish", "finish: UPDATE + attempts INSERT"),
                                 (w.q.index, "release", "release in-flight (Redis)")):
            timed(totals, obj, name, label)
        t0 = time.perf_counter()
        while runner.run_pass().claimed:
            pass
        elapsed = time.perf_counter() - t0
        print(f"{N} no-op jobs, batches of {BATCH}, one thread: {N / elapsed:.0f} jobs/s, {elapsed / N * 1e6:.1f} µs a job")
        for label, seconds in totals.items():
            print(f"  {label:<36} {seconds / N * 1e6:6.1f} µs a job")
        print(f"  {'other (loop, clock, summary)':<36} {(elapsed - sum(totals.values())) / N * 1e6:6.1f} µs a job")
    finally:
        w.close()


if __name__ == "__main__":
    main()
