"""The dashboard's job search on 1,000,000 jobs: the time of a real HTTP page, for the common searches.

    .venv/bin/python benchmarks/web_page.py            # BENCH_WEB_JOBS=1000000 (make bench runs it too)

The rows are made in MariaDB on a fresh prefix with the store's JSON bulk insert (enqueue_many's path), in four
queues, with business keys order:1 .. order:N, one job in 10,000 of a rare callable; then one UPDATE per status gives them a realistic mix: most
succeeded long ago, 1 in 500 failed (spread over the whole table), the newest 2% pending. A real `delayq web`
(bin/web.py, waitress) serves them; each search is fetched REPEAT times over HTTP (a warm-up first) and the
median and the slowest are printed, for the first page and for a page deep in the table (before=<an id near the
oldest>: a keyset page never skips rows with OFFSET, so it costs the same).
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
import subprocess
import sys
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "lib"), ROOT]

import delayq  # noqa: E402
from delayq.config import Config  # noqa: E402
from delayq.jobs import JobSpec  # noqa: E402
from delayq.store.queries import TABLES  # noqa: E402

JOBS = int(os.environ.get("BENCH_WEB_JOBS", "1000000"))
REPEAT = int(os.environ.get("BENCH_WEB_REPEAT", "20"))
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
PER_CALL = 20_000
QUEUES = ("default", "sms", "mail", "erp")
TARGET_MS = 200.0
RARE = "examples.shop:flaky_sync"
COMMON = ("no filter", "status failed", "status pending", "queue sms", "ext prefix order:12345", "ext prefix order:")
SEARCHES = (   # (what, query string); the first six are the common searches the target (< 200 ms) is judged on
    ("no filter", ""),
    ("status failed", "status=failed"),
    ("status pending", "status=pending"),
    ("queue sms", "queue=sms"),
    ("ext prefix order:12345", "ext_prefix=order:12345"),
    ("ext prefix order:", "ext_prefix=order:"),
    ("queue sms + status failed", "queue=sms&status=failed"),
    ("callable, 1 job in 10,000", "call=examples.shop:flaky_sync"),
    ("callables of a module", "call=examples.shop:"),
    ("error text (a scan)", "error=timed+out"),
)


def fill(q, n: int) -> float:
    """n jobs, then the status mix (see the module's doc)."""
    t0 = time.monotonic()
    now = time.time()
    for start in range(0, n, PER_CALL):
        specs = [JobSpec(call=RARE if i % 10_000 == 5 else "examples.shop:noop" if i % 3 else "examples.shop:record",
                         args_json="{}",
                         due_at=now - 86400 + i * 0.01, queue=QUEUES[i % len(QUEUES)], ext=f"order:{i}",
                         ladder="wechat", max_attempts=16) for i in range(start, min(start + PER_CALL, n))]
        q.store.insert_jobs(specs, now)
    jobs = f"{q.store.prefix}_jobs"
    low, last = _range(q, jobs)
    pending_from = last - n // 50
    for start in range(low, pending_from, 50_000):        # a statement per 50,000 rows: each well within a timeout
        end = min(start + 50_000, pending_from)
        with q.store.tx() as cur:
            cur.execute(f"UPDATE {jobs} SET status = 'succeeded', attempts = 1, finished_at = due_at + 1 "
                        f"WHERE id >= {start} AND id < {end} AND id % 500 <> 7")
            cur.execute(f"UPDATE {jobs} SET status = 'failed', attempts = 16, finished_at = due_at + 1, "
                        f"last_error = 'ConnectionError: ERP timed out' WHERE id >= {start} AND id < {end} "
                        f"AND id % 500 = 7")
    with q.store.tx() as cur:
        cur.execute(f"ANALYZE TABLE {jobs}")
        cur.fetchall()
    return time.monotonic() - t0


def _range(q, jobs: str) -> tuple[int, int]:
    with q.store.tx(write=False) as cur:
        cur.execute(f"SELECT MIN(id), MAX(id) FROM {jobs}")
        low, high = cur.fetchone()
    return int(low), int(high)


def serve(prefix: str) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, DELAYQ_DATABASE_URL=MYSQL, DELAYQ_PREFIX=prefix, DELAYQ_ALLOWED_MODULES="examples")
    env.pop("DELAYQ_REDIS_URL", None)
    env.pop("DELAYQ_WEB_PASSWORD", None)
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "bin", "web.py"), "--listen", "127.0.0.1:0", "--json"],
                            env=env, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"bin/web.py did not start (exit code {proc.wait()})")
    return proc, json.loads(line)["listening"]


def timed(session: requests.Session, url: str) -> tuple[float, requests.Response]:
    t0 = time.perf_counter()
    response = session.get(url, timeout=30)
    return (time.perf_counter() - t0) * 1000, response


def measure(base: str, deep_before: int) -> list[dict]:
    """Each search: median and slowest of REPEAT fetches, first page and a deep page."""
    rows = []
    with requests.Session() as session:
        times = [timed(session, base)[0] for _ in range(3)]      # the overview: one GROUP BY pass over every job
        rows.append({"search": "(overview page)", "page": "", "median_ms": round(statistics.median(times), 1),
                     "max_ms": round(max(times), 1), "jobs_on_page": 0})
        for what, query in SEARCHES:
            for page, extra in (("first", ""), ("deep", f"before={deep_before}")):
                url = base + "jobs?" + "&".join(part for part in (query, extra) if part)
                ms, response = timed(session, url)        # warm-up (and a check that it answers)
                if response.status_code != 200:
                    raise RuntimeError(f"{url}: HTTP {response.status_code}")
                times = [timed(session, url)[0] for _ in range(REPEAT)]
                found = response.text.count('class="job-link"')
                rows.append({"search": what, "page": page, "median_ms": round(statistics.median(times), 1),
                             "max_ms": round(max(times), 1), "jobs_on_page": found})
    return rows


def run(n: int = JOBS) -> dict:
    """Fill, serve, measure, clean up; the figures as a dict (benchmarks/bench.py stores them)."""
    prefix = "benchweb" + secrets.token_hex(3)
    q = delayq.open_manager(Config(database_url=MYSQL, allowed_modules=("examples",), prefix=prefix))
    proc = None
    try:
        q.store.migrate(time.time())
        filled = fill(q, n)
        print(f"web page: {n:,} jobs filled in {filled:.1f} s", flush=True)
        low, _ = _range(q, f"{prefix}_jobs")
        proc, base = serve(prefix)
        rows = measure(base, low + n // 20)
        return {"jobs": n, "repeat": REPEAT, "pages": rows,
                "slowest_common_ms": max(r["median_ms"] for r in rows if r["search"] in COMMON),
                "slowest_median_ms": max(r["median_ms"] for r in rows)}
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        with q.store.tx() as cur:
            for table in TABLES:
                cur.execute(f"DROP TABLE IF EXISTS {prefix}_{table}")
        q.close()


def report(result: dict) -> str:
    lines = [f"web dashboard: a page of the job search (50 rows) over HTTP, {result['jobs']:,} jobs in MariaDB, "
             f"median of {result['repeat']} (slowest)"]
    for row in result["pages"]:
        mark = "" if row["median_ms"] < TARGET_MS or row["search"] not in COMMON else "  OVER 200 ms"
        found = f"{row['jobs_on_page']} jobs" if row["page"] else "not a search: no target"
        lines.append(f"  {row['search']:<28} {row['page']:<6} {row['median_ms']:>7.1f} ms  ({row['max_ms']:.1f})  "
                     f"{found}{mark}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))
