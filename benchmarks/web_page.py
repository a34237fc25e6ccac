"""Every page of the dashboard on 1,000,000 jobs: the time of a real HTTP page, median and 95th percentile.

    .venv/bin/python benchmarks/web_page.py            # BENCH_WEB_JOBS=1000000 (make bench runs it too)

The rows are made in MariaDB on a fresh prefix with the store's JSON bulk insert (enqueue_many's path), in four
queues, with business keys order:1 .. order:N, one job in 10,000 of a rare callable; then one UPDATE per status gives them a realistic mix: most
succeeded long ago, 1 in 500 failed (spread over the whole table), the newest 2% pending; each finished job has
its attempt, spread over the last 7 days (about 6,000 an hour), rolled up as compensate does. A real `delayq web`
(bin/web.py, waitress) serves them; each page is fetched REPEAT times over HTTP (a warm-up first) and the
median, the 95th percentile and the slowest are printed: the overview, each search for the first page and for a
page deep in the table (before=<an id near the oldest>: a keyset page never skips rows with OFFSET, so it costs
the same), a job's page, the bulk previews, the audit trail and the login page. The target: every page's 95th
percentile under 100 ms (issue 24).
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
REPEAT = int(os.environ.get("BENCH_WEB_REPEAT", "40"))
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
PER_CALL = 20_000
QUEUES = ("default", "sms", "mail", "erp")
TARGET_MS = 200.0           # the common searches' median (issue 12)
P95_MS = 100.0              # every page's 95th percentile (issue 24)
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
    ("status succeeded", "status=succeeded"),
    ("callable, 1 job in 10,000", "call=examples.shop:flaky_sync"),
    ("callables of a module", "call=examples.shop:"),
    ("error text (a scan)", "error=timed+out"),
    ("argument order_id=12345", "arg=order_id%3D12345"),
)


def fill(q, n: int) -> float:
    """n jobs, then the status mix (see the module's doc)."""
    t0 = time.monotonic()
    now = time.time()
    for start in range(0, n, PER_CALL):
        specs = [JobSpec(call=RARE if i % 10_000 == 5 else "examples.shop:noop" if i % 3 else "examples.shop:record",
                         args_json=json.dumps({"order_id": i}),
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
    attempts = f"{q.store.prefix}_attempts"
    week = 7 * 86400
    for start in range(low, pending_from, 50_000):        # one attempt per finished job, spread over the last week
        end = min(start + 50_000, pending_from)
        with q.store.tx() as cur:
            cur.execute(f"INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error, queue, "
                        f"due_at) SELECT id, 1, {now} - {week} + (id - {low}) * {week / n} + 0.5, {now} - {week} + "
                        f"(id - {low}) * {week / n} + 0.6, IF(status = 'failed', 'failed', 'succeeded'), "
                        f"last_error, queue, {now} - {week} + (id - {low}) * {week / n} "
                        f"FROM {jobs} WHERE id >= {start} AND id < {end} AND status IN ('succeeded', 'failed')")
    with q.store.tx() as cur:
        for table in (jobs, attempts):
            cur.execute(f"ANALYZE TABLE {table}")
            cur.fetchall()
    rolled = q.control.roll_up(budget=3600.0)             # compensate's roll-up, caught up in one call
    print(f"web page: {rolled:,} rolled-up bucket rows", flush=True)
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


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def figures(session: requests.Session, url: str, what: str, page: str = "") -> dict:
    ms, response = timed(session, url)            # warm-up (and a check that it answers)
    if response.status_code != 200:
        raise RuntimeError(f"{url}: HTTP {response.status_code}")
    times = [timed(session, url)[0] for _ in range(REPEAT)]
    return {"search": what, "page": page, "median_ms": round(statistics.median(times), 1),
            "p95_ms": round(p95(times), 1), "max_ms": round(max(times), 1),
            "jobs_on_page": response.text.count('class="job-link"')}


def measure(base: str, deep_before: int, job: int) -> list[dict]:
    """Each page: median, 95th percentile and slowest of REPEAT fetches; each search, first page and a deep one."""
    rows = []
    with requests.Session() as session:
        rows.append(figures(session, base, "(overview page)"))
        for window in ("24h", "7d"):
            rows.append(figures(session, base + f"?window={window}", f"(overview, {window} charts)"))
        rows.append(figures(session, base + "?window=7d&queue=sms", "(overview, 7d, one queue)"))
        for what, query in SEARCHES:
            for page, extra in (("first", ""), ("deep", f"before={deep_before}")):
                rows.append(figures(session, base + "jobs?" + "&".join(part for part in (query, extra) if part),
                                    what, page))
        rows.append(figures(session, base + f"jobs/{job}", "(a failed job's page)"))
        rows.append(figures(session, base + "bulk/retry?queue=sms&status=failed", "(bulk retry preview)"))
        rows.append(figures(session, base + "bulk/cancel?queue=mail", "(bulk cancel preview)"))
        rows.append(figures(session, base + "audit", "(audit trail)"))
        rows.append(figures(session, base + "login", "(login page)"))
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
        with q.store.tx(write=False) as cur:       # one of the failed jobs (ids have gaps: bulk inserts)
            cur.execute(f"SELECT MIN(id) FROM {prefix}_jobs WHERE status = 'failed'")
            failed = int(cur.fetchone()[0])
        proc, base = serve(prefix)
        rows = measure(base, low + n // 20, failed)
        return {"jobs": n, "repeat": REPEAT, "pages": rows,
                "slowest_common_ms": max(r["median_ms"] for r in rows if r["search"] in COMMON),
                "slowest_median_ms": max(r["median_ms"] for r in rows),
                "slowest_p95_ms": max(r["p95_ms"] for r in rows)}
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
        with q.store.tx() as cur:
            for table in TABLES:
                cur.execute(f"DROP TABLE IF EXISTS {prefix}_{table}")
        q.close()


def report(result: dict) -> str:
    lines = [f"web dashboard: every page over HTTP, {result['jobs']:,} jobs in MariaDB, {result['repeat']} fetches: "
             "median, 95th percentile (slowest); target: every p95 under 100 ms"]
    for row in result["pages"]:
        marks = [" OVER 200 ms (median)" if row["median_ms"] >= TARGET_MS and row["search"] in COMMON else "",
                 " OVER 100 ms (p95)" if row["p95_ms"] >= P95_MS else ""]
        found = f"{row['jobs_on_page']} jobs" if row["page"] else ""
        lines.append(f"  {row['search']:<28} {row['page']:<6} {row['median_ms']:>7.1f} ms  p95 {row['p95_ms']:>6.1f} ms  "
                     f"({row['max_ms']:.1f})  {found}{''.join(marks)}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))
