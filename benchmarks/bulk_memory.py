"""Bulk actions at scale: peak memory of the real `cancel` and `purge` scripts on N matching jobs, at three sizes.

    .venv/bin/python benchmarks/bulk_memory.py          # 10,000, 100,000 and BENCH_BULK=1,000,000 jobs

The rows are made with the store's JSON bulk insert (enqueue_many's path: one JSON parameter per 500 rows)
on a fresh prefix in MariaDB. Then `bin/cancel.py --queue bulk --yes` cancels all of them and
`bin/purge.py --queue bulk --status cancelled --yes` deletes them, each as a subprocess; its own peak RSS is read
from wait4() when it exits. Constant memory: the three sizes print (nearly) the same peak.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "lib"), ROOT]

import delayq  # noqa: E402
from delayq.config import Config  # noqa: E402
from delayq.jobs import JobSpec  # noqa: E402
from delayq.store.queries import TABLES  # noqa: E402

SIZES = (10_000, 100_000, int(os.environ.get("BENCH_BULK", "1000000")))
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
PER_CALL = 20_000


def fill(q, n: int) -> float:
    """n pending jobs in queue "bulk", due in a day, written by insert_jobs (the JSON bulk insert)."""
    t0 = time.monotonic()
    due = time.time() + 86400
    spec = JobSpec(call="examples.shop:noop", args_json="{}", due_at=due, queue="bulk", ladder="wechat", max_attempts=16)
    for start in range(0, n, PER_CALL):
        q.store.insert_jobs([spec] * min(PER_CALL, n - start), time.time())
    return time.monotonic() - t0


def measure(prefix: str, *args: str) -> tuple[dict, float, float]:
    """Run one bin/ script; (its JSON, its seconds, its own peak RSS in MB, from wait4)."""
    env = dict(os.environ, DELAYQ_DATABASE_URL=MYSQL, DELAYQ_PREFIX=prefix, DELAYQ_ALLOWED_MODULES="examples")
    env.pop("DELAYQ_REDIS_URL", None)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "bin", args[0]), *args[1:], "--json"], env=env,
                            stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - t0
    if status != 0:
        raise RuntimeError(f"{args[0]} exited with status {status}")
    return json.loads(out), seconds, usage.ru_maxrss / 1024


def run(n: int) -> None:
    prefix = "benchbulk" + secrets.token_hex(3)
    q = delayq.open_manager(Config(database_url=MYSQL, allowed_modules=("examples",), prefix=prefix))
    try:
        q.store.migrate(time.time())
        print(f"{n:>9,} jobs: filled in {fill(q, n):.1f} s", flush=True)
        for args in (("cancel.py", "--queue", "bulk", "--yes"),
                     ("purge.py", "--queue", "bulk", "--status", "cancelled", "--yes")):
            data, seconds, rss = measure(prefix, *args)
            print(f"{n:>9,} jobs: {' '.join(args)}: {data['total']:,} in {seconds:.1f} s "
                  f"({data['total'] / seconds:,.0f} jobs/s), peak RSS {rss:.1f} MB", flush=True)
    finally:
        with q.store.tx() as cur:
            for table in TABLES:
                cur.execute(f"DROP TABLE IF EXISTS {prefix}_{table}")
        q.close()


def main() -> None:
    for n in SIZES:
        run(n)


if __name__ == "__main__":
    main()
