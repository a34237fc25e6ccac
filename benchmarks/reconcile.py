"""Index rebuild at scale: compensate.py's reconcile over 1,000,000 pending rows into an empty due set.

    .venv/bin/python benchmarks/reconcile.py            # BENCH_PENDING=1000000 by default

The rows are made by doubling one enqueued job in SQL (a fixture, not the code under test).
Then the due set is deleted (what FLUSHALL or an eviction does) and reconcile is timed.
"""

from __future__ import annotations

import os
import secrets
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "lib"), ROOT]

from delayq import recovery
import delayq  # noqa: E402
from delayq.config import Config  # noqa: E402
from delayq.store.queries import TABLES  # noqa: E402

PENDING = int(os.environ.get("BENCH_PENDING", "1000000"))
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REDIS = os.environ.get("DELAYQ_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
COLUMNS = "queue, callable, args, status, attempts, max_attempts, ladder, due_at, priority, created_at, updated_at"


def fill(q, prefix: str, n: int) -> None:
    q.enqueue("examples.shop:noop", delay=86400)
    with q.store.tx() as cur:
        total = 1
        while total < n:
            cur.execute(f"INSERT INTO {prefix}_jobs ({COLUMNS}) SELECT {COLUMNS} FROM {prefix}_jobs LIMIT {n - total}")
            total += cur.rowcount


def main() -> None:
    prefix = "benchrc" + secrets.token_hex(3)
    q = delayq.open_manager(Config(database_url=MYSQL, redis_url=REDIS, allowed_modules=("examples",), prefix=prefix))
    try:
        q.store.migrate(time.time())
        t0 = time.monotonic()
        fill(q, prefix, PENDING)
        print(f"filled {PENDING} pending rows in {time.monotonic() - t0:.1f} s")
        q.index.r.delete(q.index.keys("default")[0])
        t0 = time.monotonic()
        result = recovery.reconcile(q.store, q.index, q.clock)
        first = time.monotonic() - t0
        t0 = time.monotonic()
        again = recovery.reconcile(q.store, q.index, q.clock)
        second = time.monotonic() - t0
        print(f"reconcile into an empty due set: {result.restored} restored of {result.scanned} scanned in {first:.1f} s")
        print(f"reconcile again (nothing missing): {again.restored} restored, {again.dropped} dropped in {second:.1f} s")
    finally:
        with q.store.tx() as cur:
            for table in TABLES:
                cur.execute(f"DROP TABLE IF EXISTS {prefix}_{table}")
        keys = list(q.index.r.scan_iter(match="{" + prefix + ":*"))
        if keys:
            q.index.r.delete(*keys)


if __name__ == "__main__":
    main()
