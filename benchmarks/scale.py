"""Issue 26: delayq with SCALE jobs pending and SCALE finished, each figure beside an empty store in the same run.

    .venv/bin/python benchmarks/scale.py          # BENCH_SCALE=200000 (about 4 min); make bench-scale runs the same
    BENCH_SCALE=10000000 BENCH_SCALE_BUFFER_POOL=14G .venv/bin/python benchmarks/scale.py   # the run of record: 40 min
    .venv/bin/python benchmarks/scale.py --report # the last run's table again, from results/scale.json

Everything runs on a private mariadbd (buffer pool BENCH_SCALE_BUFFER_POOL, default 8G; redo log 1G; no binary log
until the ceiling part) and a private redis-server, both in /tmp and removed at the end: the shared servers are
never touched. One table prefix ("the world") is filled with the store's JSON bulk insert (insert_jobs, 20,000
jobs a transaction, two connections): first SCALE finished jobs in four queues (finished 8 to 1 days ago, 1 in 500
failed, each with one attempt row, 4 finished in the last 10 minutes), then SCALE pending jobs due in 1 to 8 days
(queue default, business keys order:N, as the seeds' auto-confirm job). The due index is filled by the rebuild's restore
path (recovery.reconcile) and the dashboard's roll-up is caught up. Then, in this order:

- memory and disk: Redis used_memory before and after the index fill over the jobs it holds, MEMORY USAGE of the
  due set over its ZCARD, and a Sidekiq-shaped `schedule` set measured the same way; MariaDB's data + indexes per
  row of the jobs and attempts tables after ANALYZE TABLE, and each index's size (mysql.innodb_index_stats).
- operator reads: every dashboard page (web_page.measure: p50, p95), the issue's four queries (also on a world of
  1,000,000 jobs when SCALE is at least that), and `delayq stats`, `list` (first and deep keyset page), `show`:
  the command's execute in this process (output captured) and the whole CLI process.
- the runner: the no-op burst (N_BURST due at once, defaults) and 2,000 jobs of 20 ms (--concurrency 64
  --processes 1), single enqueues from 4 threads through one client and enqueue_many: on the world and on an empty
  prefix, alternated run by run (BENCH_SCALE_RUNS, median); for the burst also mariadbd's and Redis's CPU a job.
- the rebuild: the world's Redis keys deleted (this prefix only), then `compensate --rebuild now` while a runner
  runs a stream of RATE jobs/s each due 1 s after its enqueue: rebuild time, the stream's lateness (start - due)
  for jobs due during it, and the longest gap between consecutive completions (also in the 3 s before it).
- purge: `delayq purge --older-than 1d --batch 500 --yes` of the SCALE finished jobs, with the same stream:
  jobs/s, lateness and the longest gap during it.
- the ceiling: a burst on an empty prefix with SHOW GLOBAL STATUS read before and after (rows written, redo
  fsyncs, commits) and mariadbd's CPU, then the same after a restart with the binary log on (sync_binlog=1).
A part that fails is recorded with its error and the next one runs; a private mariadbd that crashes is started again
(its log kept in the figures). Prints a table; writes benchmarks/results/scale.json (make bench: under "scale" in
latest.json). docs/PERFORMANCE.md, "Ten million jobs (issue 26)", says what each line means.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, os.path.join(ROOT, "lib"), ROOT]

import pymysql  # noqa: E402
import requests  # noqa: E402

import delayq  # noqa: E402
import web_page  # noqa: E402
from client_enqueue import _enqueue_from  # noqa: E402
from concurrency import WAIT  # noqa: E402
from delayq import app, recovery  # noqa: E402
from delayq.commands import list as list_command, show as show_command, stats as stats_command  # noqa: E402
from delayq.jobs import JobSpec  # noqa: E402
from delayq_side import NOOP, World, _pct, stop  # noqa: E402
from procfs import cpu_seconds  # noqa: E402
from tests.chaos.servers import PrivateMariaDB, PrivateRedis  # noqa: E402

SCALE = int(os.environ.get("BENCH_SCALE", "200000"))
N_BURST = int(os.environ.get("BENCH_SCALE_BURST", "20000"))
IO_N, IO_MS, IO_FLAGS = 2000, 20, ("--concurrency", "64", "--processes", "1")
ENQ_THREADS, ENQ_EACH, ENQ_BULK = 4, 1000, 20000
RUNS = int(os.environ.get("BENCH_SCALE_RUNS", "3"))
RATE = int(os.environ.get("BENCH_SCALE_RATE", "200"))          # the stream during the rebuild and the purge, jobs/s
BUFFER_POOL = os.environ.get("BENCH_SCALE_BUFFER_POOL", "8G")
SERVER_ARGS = ("--innodb-log-file-size=1G",)
BINLOG_ARGS = ("--log-bin=mariadb-bin", "--sync-binlog=1", "--server-id=1")
# fetches of each page, calls of each command in this process (the CLI process: half as many, at least 3)
REPEAT = int(os.environ.get("BENCH_SCALE_REPEAT", "20" if SCALE <= 1_000_000 else "10"))
BUDGET = 60.0                      # seconds one page or command may take in all: fewer repeats (at least 3) past it
PER_CALL = 20_000
QUEUES = ("default", "sms", "mail", "erp")
DAY = 86400.0
P95_MS, LATE_P99_MS, STALL_MS, FLAT = 100.0, 1000.0, 100.0, 0.10       # issue 26's targets
FOUR = (("overview", ""), ("status failed", "jobs?status=failed"),
        ("finished in the last 10 minutes", "jobs?time=finished&since=10m"),
        ("ext prefix order: + status failed", "jobs?ext_prefix=order:&status=failed"))
# Read around each bulk enqueue (median a side): pages read from disk, waits for a free page, pages flushed.
BULK_KEYS = ("Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_wait_free",
             "Innodb_buffer_pool_pages_flushed", "Innodb_data_fsyncs")
# Sampled every SAMPLE_S during purge: what the longest gap between the stream's completions coincides with.
SAMPLE_KEYS = ("Innodb_checkpoint_age", "Innodb_history_list_length", "Innodb_log_waits",
               "Innodb_buffer_pool_wait_free", "Innodb_buffer_pool_pages_dirty", "Innodb_row_lock_waits",
               "Innodb_data_pending_fsyncs", "Innodb_os_log_pending_fsyncs")
SAMPLE_S = 0.1
LONG_STATEMENTS = ("SELECT TIME_MS, LEFT(REPLACE(INFO, '\\n', ' '), 90) FROM information_schema.PROCESSLIST "
                   "WHERE COMMAND = 'Query' AND TIME_MS >= 50 AND INFO NOT LIKE '%PROCESSLIST%' ORDER BY TIME_MS DESC")
STATUS_KEYS = ("Handler_write", "Handler_update", "Handler_delete", "Innodb_data_fsyncs", "Innodb_log_writes",
               "Innodb_os_log_written", "Com_commit", "Handler_commit", "Binlog_commits", "Binlog_group_commits")


# -- the world: SCALE finished jobs, then SCALE pending ones ---------------------------------------------------

class Admin:
    """The bench's own SQL on the private server (the fill's updates, counts, sizes, status): a plain PyMySQL
    connection without delayq's per-operation deadline (DELAYQ_DB_TIMEOUT), which a count of 20M rows may pass."""

    def __init__(self, database_url: str, prefix: str):
        u = urlsplit(database_url)
        self.prefix = prefix
        self.conn = pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                                    password=u.password or "", database=u.path.lstrip("/"), autocommit=True)

    def sql(self, text: str, args=None) -> list:
        with self.conn.cursor() as cur:
            cur.execute(text.replace("{jobs}", self.prefix + "_jobs").replace("{attempts}", self.prefix + "_attempts"),
                        args)
            return list(cur.fetchall())

    def close(self) -> None:
        self.conn.close()


def fill(w: World, finished: int, pending: int) -> dict:
    """The rows (see the module's doc), written by FILL_THREADS connections; seconds for each part."""
    admin = Admin(w.config.database_url, w.prefix)
    try:
        t0 = time.monotonic()
        now = w.q.clock.now()
        low, high = _block(w, range(finished), now - 8 * DAY, 7 * DAY / max(finished, 1),
                           lambda i: QUEUES[i % len(QUEUES)])
        t1 = time.monotonic()
        _parallel(lambda a, b: _finish(admin_for(w), a, b), [(a, min(a + 50_000, high + 1))
                                                             for a in range(low, high + 1, 50_000)])
        _recent(admin, now)
        t2 = time.monotonic()
        _block(w, range(finished, finished + pending), now + DAY - finished * 7 * DAY / max(pending, 1),
               7 * DAY / max(pending, 1), lambda i: "default")
        t3 = time.monotonic()
        for table in ("jobs", "attempts"):
            admin.sql(f"ANALYZE TABLE {{{table}}}")
        return {"finished_insert_s": round(t1 - t0, 1), "finished_update_s": round(t2 - t1, 1),
                "pending_s": round(t3 - t2, 1), "analyze_s": round(time.monotonic() - t3, 1)}
    finally:
        admin.close()
        _close_thread_connections()


FILL_THREADS = 2
_local = threading.local()
_opened: list = []


def _parallel(work, items: list[tuple]) -> list:
    """work(*item) for each item on FILL_THREADS threads (mariadbd writes on both cores while Python builds rows)."""
    with ThreadPoolExecutor(FILL_THREADS) as pool:
        return list(pool.map(lambda item: work(*item), items))


def manager_for(w: World):
    """This thread's own delayq manager on the world (a pooled connection each)."""
    if getattr(_local, "manager", None) is None:
        _local.manager = delayq.open_manager(w.config)
        _opened.append(_local.manager)
    return _local.manager


def admin_for(w: World) -> Admin:
    if getattr(_local, "admin", None) is None:
        _local.admin = Admin(w.config.database_url, w.prefix)
        _opened.append(_local.admin)
    return _local.admin


def _close_thread_connections() -> None:
    while _opened:
        _opened.pop().close()


def _block(w: World, numbers: range, first_due: float, step: float, queue_of) -> tuple[int, int]:
    """Jobs numbered `numbers` (business key order:N, argument order_id=N, 1 in 10,000 of a rare callable), due at
    first_due + N * step, by the store's JSON bulk insert, PER_CALL a transaction; (the lowest id, the highest)."""
    def insert(a: int, b: int) -> tuple[int, int]:
        specs = [JobSpec(call=web_page.RARE if i % 10_000 == 5 else "examples.shop:noop" if i % 3 else
                         "examples.shop:record", args_json=json.dumps({"order_id": i}), due_at=first_due + i * step,
                         queue=queue_of(i), ext=f"order:{i}", ladder="wechat", max_attempts=16) for i in range(a, b)]
        q = manager_for(w)
        ids = [row.id for row in q.store.insert_jobs(specs, q.clock.now())]
        return min(ids), max(ids)
    spans = _parallel(insert, [(a, min(a + PER_CALL, numbers.stop)) for a in range(numbers.start, numbers.stop,
                                                                                    PER_CALL)])
    return min(a for a, _ in spans), max(b for _, b in spans)


def _finish(admin: Admin, low: int, end: int) -> None:
    """Rows low..end-1 finished a second after they were due (1 in 500 failed), each with its attempt row."""
    failed = "MOD(id, 500) = 7"
    admin.sql(f"UPDATE {{jobs}} SET status = IF({failed}, 'failed', 'succeeded'), attempts = IF({failed}, 16, 1), "
              f"started_at = due_at + 0.5, finished_at = due_at + 1, updated_at = due_at + 1, "
              f"last_error = IF({failed}, 'ConnectionError: ERP timed out', NULL) WHERE id >= {low} AND id < {end}")
    admin.sql("INSERT INTO {attempts} (job_id, attempt, started_at, finished_at, outcome, error, queue, due_at) "
              "SELECT id, 1, started_at, finished_at, IF(status = 'failed', 'failed', 'succeeded'), last_error, "
              f"queue, due_at FROM {{jobs}} WHERE id >= {low} AND id < {end}")


def _recent(admin: Admin, now: float) -> None:
    """Four of the finished jobs finished in the last 10 minutes: the issue's "few matches" search."""
    ids = [row[0] for row in admin.sql("SELECT id FROM {jobs} WHERE status = 'succeeded' ORDER BY id LIMIT 4")]
    for k, job in enumerate(ids):
        admin.sql(f"UPDATE {{jobs}} SET finished_at = {now - 60 * (k + 1)} WHERE id = {job}")
        admin.sql(f"UPDATE {{attempts}} SET finished_at = {now - 60 * (k + 1)} WHERE job_id = {job}")


@contextlib.contextmanager
def patient(w: World):
    """A manager on the world whose store waits up to 600 s an operation (DELAYQ_DB_TIMEOUT), for the bench's own
    one-off calls of lib code on big tables (the index fill, the roll-up): a slow first page must not end the run.
    The parts under test (compensate, purge, the runner, the reads) keep delayq's default of 20 s."""
    q = delayq.open_manager(dataclasses.replace(w.config, db_timeout=600.0))
    try:
        yield q
    finally:
        q.close()


def index_fill(w: World) -> dict:
    """The due index filled by the rebuild's restore path: time, and Redis's bytes a pending job."""
    r = w.q.index.r
    before = r.info("memory")["used_memory"]
    t0 = time.monotonic()
    with patient(w) as q:
        done = recovery.reconcile(q.store, q.index, q.clock)
    seconds = time.monotonic() - t0
    after = r.info("memory")["used_memory"]
    due = w.q.index.keys("default")[0]
    members = r.zcard(due)
    usage = r.execute_command("MEMORY", "USAGE", due, "SAMPLES", "0")
    return {"seconds": round(seconds, 1), "restored": done.restored, "used_memory_before": before,
            "used_memory_after": after, "bytes_a_job": round((after - before) / max(done.restored, 1), 1),
            "due_set_members": members, "due_set_bytes": usage, "due_set_bytes_a_member": round(usage / max(members, 1), 1)}


SIDEKIQ_MEMBER = ('{"retry":true,"queue":"default","class":"Searches::AsyncSchedulerWorker","args":[{"id":'
                  '"60c77be4260ca9914b0df05c","host":"127.0.0.1","port":3000}],"created_at":1623686116,"jid":"%s"}')


def sidekiq_shaped(r, n: int) -> dict:
    """A Sidekiq `schedule` sorted set of n jobs (the member of sidekiq/sidekiq#4923, ~215 bytes of JSON with a
    unique jid), measured the way delayq's index is: used_memory before and after over n; then deleted."""
    key = "scale-bench:sidekiq-schedule:" + secrets.token_hex(4)
    before = r.info("memory")["used_memory"]
    for start in range(0, n, 10_000):
        r.zadd(key, {SIDEKIQ_MEMBER % secrets.token_hex(12): 1.7e9 + i for i in range(start, min(start + 10_000, n))})
    after = r.info("memory")["used_memory"]
    usage = r.execute_command("MEMORY", "USAGE", key, "SAMPLES", "0")
    r.delete(key)
    return {"jobs": n, "member_bytes": len(SIDEKIQ_MEMBER % ("0" * 24)), "bytes_a_job": round((after - before) / n, 1),
            "memory_usage_a_member": round(usage / n, 1)}


def disk(w: World) -> dict:
    """Data + indexes per row of the jobs and attempts tables (after ANALYZE TABLE), and each index's size."""
    admin = Admin(w.config.database_url, w.prefix)
    try:
        page = admin.sql("SELECT @@innodb_page_size")[0][0]
        return {table: _table_size(admin, f"{w.prefix}_{table}", page) for table in ("jobs", "attempts")}
    finally:
        admin.close()


def _table_size(admin: Admin, name: str, page: int) -> dict:
    admin.sql(f"ANALYZE TABLE {name}")
    data, index = admin.sql("SELECT data_length, index_length FROM information_schema.TABLES WHERE "
                            f"table_schema = DATABASE() AND table_name = '{name}'")[0]
    rows = admin.sql(f"SELECT COUNT(*) FROM {name}")[0][0]
    sizes = admin.sql("SELECT index_name, stat_value FROM mysql.innodb_index_stats WHERE database_name = DATABASE() "
                      f"AND table_name = '{name}' AND stat_name = 'size' ORDER BY stat_value DESC")
    return {"rows": rows, "data_bytes": data, "index_bytes": index, "bytes_a_row": round((data + index) / max(rows, 1), 1),
            "data_bytes_a_row": round(data / max(rows, 1), 1),
            "per_index_bytes_a_row": {n: round(v * page / max(rows, 1), 1) for n, v in sizes}}


def roll_up(w: World) -> int:
    """compensate's roll-up of the attempts into the dashboard's buckets, caught up in one call (web_page.fill's)."""
    with patient(w) as q:
        return q.control.roll_up(budget=3600.0)


# -- operator reads ----------------------------------------------------------------------------------------

def repeated(fn, repeat: int = REPEAT) -> dict:
    """fn() once to warm up, then up to `repeat` times (at least 3, fewer past BUDGET seconds): ms p50, p95, max."""
    fn()
    times, began = [], time.monotonic()
    while len(times) < repeat and (len(times) < 3 or time.monotonic() - began < BUDGET):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(web_page.p95(times), 1),
            "max_ms": round(max(times), 1), "n": len(times)}


def four_queries(base: str) -> dict:
    """The issue's four pages over HTTP from the dashboard `base`."""
    with requests.Session() as session:
        def fetch(url: str):
            return lambda: _ok(session.get(url, timeout=120))
        return {what: guarded(repeated, fetch(base + path)) for what, path in FOUR}


def _ok(response: requests.Response) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"{response.url}: HTTP {response.status_code}")


def commands(w: World, deep_before: int, failed: int) -> dict:
    """`delayq stats`, `list` (first and deep keyset page), `show`: in this process and as a whole CLI process."""
    cases = {"stats": (stats_command, []), "list": (list_command, []),
             "list, deep page": (list_command, ["--before", str(deep_before)]),
             "show": (show_command, ["--id", str(failed)])}
    out = {}
    for name, (module, argv) in cases.items():
        args = module.build_parser("delayq").parse_args(argv)
        args.prog = "delayq " + name
        command = name.split(",")[0]
        out[name] = {"in_process": guarded(repeated, lambda m=module, a=args: _captured(m, a, w.config)),
                     "process": guarded(repeated, lambda c=command, a=argv: _process(w, c, a), max(3, REPEAT // 2))}
    return out


def _captured(module, args, settings) -> None:
    """The command's execute, as `delayq` runs it after parsing: its output captured, the manager it opened closed
    afterwards (a command leaves that to its process's exit)."""
    opened, open_reader = [], app.open_reader

    def reader(*a, **k):
        opened.append(open_reader(*a, **k))
        return opened[-1]
    app.open_reader = reader
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            if module.execute(args, settings):
                raise RuntimeError(f"{args.prog} failed")
    finally:
        app.open_reader = open_reader
        for manager in opened:
            manager.close()


def _process(w: World, command: str, argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-m", "delayq", command, *argv], env=w.env, cwd=HERE,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"delayq {command} exited {done.returncode}: {done.stderr.strip()[-300:]}")


@contextlib.contextmanager
def dashboard(database_url: str, prefix: str):
    """A real `delayq web` (web_page.serve) on the world; yields its base URL."""
    saved = web_page.MYSQL, web_page.REPEAT
    web_page.MYSQL, web_page.REPEAT = database_url, REPEAT
    proc, base = web_page.serve(prefix)
    try:
        yield base
    finally:
        web_page.MYSQL, web_page.REPEAT = saved
        proc.terminate()
        proc.wait(timeout=10)


def operator_reads(w: World, deep_before: int) -> dict:
    """Every dashboard page, the issue's four, the commands: on the world as it is after the fill. `deep_before`:
    a keyset page far down the table (an id near the oldest)."""
    failed = w.sql("SELECT MIN(id) FROM {jobs} WHERE status = 'failed'")[0][0]
    with dashboard(w.config.database_url, w.prefix) as base:
        pages = guarded(web_page.measure, base, deep_before, failed)
        four = guarded(four_queries, base)
    return {"pages": pages, "slowest_p95_ms": None if "error" in pages else max(p["p95_ms"] for p in pages),
            "four": four, "commands": commands(w, deep_before, failed),
            "process_start": guarded(repeated, lambda: _process(w, "--version", []), max(3, REPEAT // 2))}


def four_at(database_url: str, redis_url: str, jobs: int) -> dict:
    """The issue's four queries on a world of `jobs` jobs: half finished, half pending, filled as the big one."""
    w = World(database_url, redis_url)
    try:
        fill(w, jobs // 2, jobs - jobs // 2)
        roll_up(w)
        with dashboard(database_url, w.prefix) as base:
            return {"jobs": jobs, "four": four_queries(base)}
    finally:
        w.close()


# -- the runner: a burst, 20 ms jobs, enqueue; on the world and on an empty prefix ----------------------------

def burst_on(w: World, n: int, call: str = NOOP, args: dict | None = None, flags: tuple[str, ...] = (),
             servers: dict | None = None, cpu: dict | None = None) -> float:
    """n jobs `call(**args)` due at one moment T, one runner with `flags`: n / (T -> the last outcome committed).
    With `servers` (name -> a function giving its pid): cpu[name] = its CPU µs a job from the runner's start to the
    last outcome (the enqueue left out)."""
    due = w.q.clock.now() + 2.0 + n / 5000
    ids = [row.id for row in w.q.enqueue_many({"call": call, "args": args or {}, "at": due} for _ in range(n))]
    if w.q.clock.now() > due:
        raise RuntimeError("enqueue outlasted the lead time: raise it")
    before = {name: cpu_seconds(pid()) for name, pid in (servers or {}).items()}
    runner = Runner(w, *flags)
    try:
        done = _drained(w, due, runner)
    finally:
        runner.stop()
    for name, pid in (servers or {}).items():
        cpu[name] = (cpu_seconds(pid()) - before[name]) / n * 1e6
    succeeded = w.sql(f"SELECT COUNT(*) FROM {{jobs}} WHERE id BETWEEN {min(ids)} AND {max(ids)} "
                      "AND status = 'succeeded'")[0][0]
    if succeeded != n:
        raise RuntimeError(f"{succeeded} of {n} jobs succeeded")
    return n / (done - due)


class Runner(subprocess.Popen):
    """World.runner's `run_due.py --for 3600` with `flags`, its stderr kept in a file: a runner that ends early
    says why (its exit code and its last lines)."""

    def __init__(self, w: World, *flags: str):
        self.log = tempfile.TemporaryFile("w+")
        super().__init__([sys.executable, os.path.join(ROOT, "bin", "run_due.py"), "--for", "3600", "--json",
                          "--quiet", *flags], env=w.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=self.log, text=True)

    def why(self) -> str:
        self.log.seek(0)
        tail = self.log.read()[-600:].strip().replace("\n", " | ")
        return f"the runner ended with exit code {self.poll()}: {tail or '(nothing on stderr)'}"

    def stop(self) -> None:
        stop(self)
        self.log.close()


def _drained(w: World, due: float, runner: Runner, timeout: float = 900, interval: float = 0.005) -> float:
    """Poll until no job due by `due` is pending or running (World.wait_committed's query); that moment."""
    query = ("SELECT 1 FROM {jobs} WHERE (status = 'pending' AND queue = 'default' AND priority = 0 AND due_at <= %s) "
             "OR status = 'running' LIMIT 1")
    deadline = time.monotonic() + timeout
    while w.sql(query, (due,)):
        if runner.poll() is not None:
            raise RuntimeError(runner.why())
        if time.monotonic() > deadline:
            raise RuntimeError(f"the runner's jobs were not done in {timeout:g} s")
        time.sleep(interval)
    return w.q.clock.now()


def enqueue_on(w: World) -> dict:
    """Single enqueues from ENQ_THREADS threads through one client, and one enqueue_many: jobs/s (due in 30 days)."""
    client = delayq.connect(w.config)
    try:
        client.enqueue_many({"call": NOOP, "delay": 30 * DAY} for _ in range(100))     # warm-up
        single = ENQ_THREADS * ENQ_EACH / _enqueue_from(client, ENQ_THREADS, ENQ_EACH)
        before = _status(w, BULK_KEYS)
        t0 = time.perf_counter()
        client.enqueue_many({"call": NOOP, "delay": 30 * DAY} for _ in range(ENQ_BULK))
        rate = ENQ_BULK / (time.perf_counter() - t0)
        after = _status(w, BULK_KEYS)
        return {"single": single, "bulk": rate, "bulk_server": {k: after[k] - before[k] for k in after}}
    finally:
        client.close()


def runner_figures(world: World, servers: dict) -> dict:
    """Each figure on the world and on a fresh empty prefix, alternated run by run: medians and loaded / empty; for
    the burst also the CPU a job (the run, not the enqueue) of each server in `servers` (name -> its pid, asked each
    time: a server started again has another): where a gap comes from."""
    runs: dict[str, dict[str, list[float]]] = {k: {"empty": [], "loaded": []} for k in ("burst", "io", "single", "bulk")}
    cpu: dict[str, dict[str, list[float]]] = {name: {"empty": [], "loaded": []} for name in servers}
    bulk_server: dict[str, dict[str, list[float]]] = {"empty": {}, "loaded": {}}
    for _ in range(RUNS):
        for side in ("empty", "loaded"):
            used: dict[str, float] = {}
            runs["burst"][side].append(_on(world, side, lambda w, used=used: burst_on(w, N_BURST, servers=servers,
                                                                                      cpu=used)))
            for name, us in used.items():
                cpu[name][side].append(us)
            runs["io"][side].append(_on(world, side, lambda w: burst_on(w, IO_N, WAIT, {"ms": IO_MS}, IO_FLAGS)))
            enq = _on(world, side, enqueue_on)
            runs["single"][side].append(enq["single"])
            runs["bulk"][side].append(enq["bulk"])
            for k, v in enq["bulk_server"].items():
                bulk_server[side].setdefault(k, []).append(v)
            print(f"scale: runner, {side}: burst {runs['burst'][side][-1]:.0f}, io {runs['io'][side][-1]:.0f}, "
                  f"single {enq['single']:.0f}, bulk {enq['bulk']:.0f} jobs/s", file=sys.stderr, flush=True)
    out = {}
    for name, sides in runs.items():
        empty, loaded = statistics.median(sides["empty"]), statistics.median(sides["loaded"])
        out[name] = {"empty": round(empty), "loaded": round(loaded), "ratio": round(loaded / empty, 3),
                     "empty_runs": [round(x) for x in sides["empty"]], "loaded_runs": [round(x) for x in sides["loaded"]]}
    out["burst"]["cpu_us_a_job"] = {name: {side: round(statistics.median(v), 1) for side, v in sides.items()}
                                    for name, sides in cpu.items()}
    out["bulk"]["server"] = {side: {k: statistics.median(v) for k, v in keys.items()} for side, keys in bulk_server.items()}
    return out


def _on(world: World, side: str, measure):
    if side == "loaded":
        return measure(world)
    w = World(world.config.database_url, world.config.redis_url)
    try:
        return measure(w)
    finally:
        w.close()


# -- a runner under a steady stream while something big runs -------------------------------------------------

class Stream(threading.Thread):
    """RATE no-op jobs/s, each due `delay` s after its enqueue, in bulk every 50 ms, until halt() (delayq_side.produce
    with an end chosen later)."""

    def __init__(self, w: World, rate: float = RATE, delay: float = 1.0):
        super().__init__(daemon=True)
        self.w, self.rate, self.delay = w, rate, delay
        self.halted, self.sent, self.last_due, self.error = threading.Event(), 0, 0.0, None

    def run(self) -> None:
        per_tick = max(1, round(self.rate * 0.05))
        producer = delayq.open_manager(self.w.config)
        start = time.monotonic()
        try:
            while not self.halted.is_set():
                pause = start + self.sent / self.rate - time.monotonic()
                if pause > 0 and self.halted.wait(pause):
                    break
                now = producer.clock.now()
                producer.enqueue_many({"call": NOOP, "at": now + self.delay + i / self.rate} for i in range(per_tick))
                self.sent, self.last_due = self.sent + per_tick, now + self.delay + (per_tick - 1) / self.rate
        except BaseException as exc:        # reported by halt(): the producer must not die silently
            self.error = exc
        finally:
            producer.close()

    def halt(self) -> None:
        self.halted.set()
        self.join()
        if self.error:
            raise RuntimeError(f"the stream's producer failed: {self.error!r}")


def under_stream(w: World, action, settle: float = 3.0) -> dict:
    """A runner (--interval 0.05) and a Stream; `action()` runs after `settle` s of stream and is timed; then
    `settle` s more. The stream's lateness for jobs due while the action ran, and the longest gap between
    consecutive completions then and in the `settle` s before it."""
    mark = w.sql("SELECT COALESCE(MAX(id), 0) FROM {jobs}")[0][0]
    runner = Runner(w, "--interval", "0.05")
    try:
        w.wait_running(runner)
        stream = Stream(w)
        stream.start()
        try:
            time.sleep(settle)
            began = w.q.clock.now()
            result = action()
            ended = w.q.clock.now()
            time.sleep(settle)
        finally:
            stream.halt()
        _drained(w, stream.last_due, runner, interval=0.1)
    finally:
        runner.stop()
    rows = w.sql(f"SELECT j.due_at, a.started_at, a.finished_at FROM {{attempts}} a JOIN {{jobs}} j ON j.id = a.job_id "
                 f"WHERE j.id > {mark} AND j.callable = %s", (NOOP,))
    return {**result, "seconds": round(ended - began, 1), "stream_jobs": len(rows), "rate": RATE, "began_at": began,
            "during": _lateness(rows, began, ended), "before": _lateness(rows, began - settle, began)}


class Sampler(threading.Thread):
    """SHOW GLOBAL STATUS's SAMPLE_KEYS every SAMPLE_S s on its own connection, until halt(): (epoch s, values)."""

    def __init__(self, w: World):
        super().__init__(daemon=True)
        self.admin, self.halted, self.samples = Admin(w.config.database_url, w.prefix), threading.Event(), []

    def run(self) -> None:
        while not self.halted.wait(SAMPLE_S):
            values: dict = _status(self.admin, SAMPLE_KEYS)
            values["statements"] = [f"{ms / 1000:.1f} s: {text}" for ms, text in self.admin.sql(LONG_STATEMENTS)]
            self.samples.append((time.time(), values))

    def halt(self) -> list[tuple[float, dict]]:
        self.halted.set()
        self.join()
        self.admin.close()
        return self.samples


def around_gap(samples: list[tuple[float, dict]], x: dict) -> dict:
    """What the server's counters did in the longest gap between the stream's completions (and the second before
    it), beside the whole run: the gauges' largest value, the counters' increase."""
    during = x.get("during", {})
    if not samples or "longest_gap_ended_s" not in during:
        return {}
    end = x["began_at"] + during["longest_gap_ended_s"]
    start = end - during["longest_gap_ms"] / 1000 - 1.0
    near = [v for t, v in samples if start <= t <= end + SAMPLE_S] or [samples[-1][1]]
    every = [v for _, v in samples]
    counters = ("Innodb_log_waits", "Innodb_buffer_pool_wait_free", "Innodb_row_lock_waits")

    def figures(rows: list[dict]) -> dict:
        return {k: (rows[-1].get(k, 0) - rows[0].get(k, 0)) if k in counters else max(r.get(k, 0) for r in rows)
                for k in SAMPLE_KEYS}
    statements = list(dict.fromkeys(text.split(": ", 1)[1] for v in near for text in v["statements"]))
    longest = max((float(text.split(" s: ")[0]), text) for v in every for text in v["statements"]) \
        if any(v["statements"] for v in every) else (0, "")
    return {"gap": {**figures(near), "statements": statements[:8]}, "run": figures(every), "samples": len(samples),
            "longest_statement": longest[1]}


def _lateness(rows, since: float, until: float) -> dict:
    """Of the jobs due in [since, until): lateness p50 / p99 / max, and the longest gap between completions."""
    picked = [(float(d), float(s), float(f)) for d, s, f in rows if since <= float(d) < until]
    if not picked:
        return {"jobs": 0}
    late = sorted((s - d) * 1000 for d, s, _ in picked)
    done = sorted(f for _, _, f in picked)
    gap, end = max(((b - a, b) for a, b in itertools.pairwise(done)), default=(0.0, since))
    return {"jobs": len(picked), "p50_ms": round(_pct(late, 50), 1), "p99_ms": round(_pct(late, 99), 1),
            "max_ms": round(late[-1], 1), "longest_gap_ms": round(gap * 1000, 1),
            "stall_ms": round(max(0.0, gap * 1000 - 1000 / RATE), 1), "longest_gap_ended_s": round(end - since, 2)}


def rebuild(w: World) -> dict:
    """The world's Redis keys deleted (only this prefix's), then `compensate --rebuild now` under the stream."""
    r = w.q.index.r
    keys = [k for p in ("{" + w.prefix + ":*", "{" + w.prefix + "}:*") for k in r.scan_iter(match=p, count=1000)]
    for start in range(0, len(keys), 1000):
        r.delete(*keys[start:start + 1000])

    def compensate() -> dict:
        done = subprocess.run([sys.executable, os.path.join(ROOT, "bin", "compensate.py"), "--rebuild", "now",
                               "--json"], env=w.env, cwd=ROOT, capture_output=True, text=True, check=True)
        data = json.loads(done.stdout.strip().splitlines()[-1])
        return {"restored": data["restored"], "scanned": data["scanned"], "compensate_seconds": data["seconds"]}
    return under_stream(w, compensate)


def purge(w: World) -> dict:
    """`delayq purge --older-than 1d --batch 500 --yes` of the finished jobs, under the stream."""
    admin = Admin(w.config.database_url, w.prefix)
    mark = admin.sql("SELECT MAX(id) FROM {jobs}")[0][0]
    count = f"SELECT COUNT(*) FROM {{attempts}} WHERE job_id <= {mark}"
    attempts = admin.sql(count)[0][0]

    def run() -> dict:
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, os.path.join(ROOT, "bin", "purge.py"), "--older-than", "1d",
                               "--batch", "500", "--yes", "--json"], env=w.env, cwd=ROOT, capture_output=True,
                              text=True, check=True)
        seconds = time.monotonic() - t0
        deleted = json.loads(done.stdout.strip().splitlines()[-1])["total"]
        return {"deleted": deleted, "jobs_per_s": round(deleted / seconds)}
    sampler = Sampler(w)
    sampler.start()
    try:
        out = under_stream(w, run)
    finally:
        samples = sampler.halt()
    out["server"] = around_gap(samples, out)
    out["attempts_deleted"] = attempts - admin.sql(count)[0][0]
    admin.close()
    return out


# -- the ceiling on paper: what one job writes and syncs --------------------------------------------------------

def ceiling(db: PrivateMariaDB, redis_url: str) -> dict:
    """A burst on an empty prefix with the server's counters read around it; then the same with the binary log
    (sync_binlog=1, as a primary with replicas runs); and how many fsyncs a second the data directory's disk takes."""
    out = {"no_binlog": _counted(db, redis_url)}
    db.stop()
    db.start(extra_args=SERVER_ARGS + BINLOG_ARGS)
    out["binlog"] = _counted(db, redis_url)
    out["fsync_ms"] = fsync_ms(db.dir)
    return out


def fsync_ms(directory: str, n: int = 200) -> float:
    """The median time of a 4 KiB write + fdatasync in `directory`: one at a time, as one log flush waits for the
    one before it (so 1000 / this is the group commits a second the disk allows, however many commits each holds)."""
    path = os.path.join(directory, "fsync-probe")
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for i in range(n):
            t0 = time.perf_counter()
            os.pwrite(fd, b"x" * 4096, (i % 64) * 4096)
            os.fdatasync(fd)
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
        os.unlink(path)
    return round(statistics.median(times), 3)


def _counted(db: PrivateMariaDB, redis_url: str) -> dict:
    w = World(db.url, redis_url)
    try:
        before, cpu = _status(w), cpu_seconds(db.proc.pid)
        rate = burst_on(w, N_BURST)
        after, cpu = _status(w), cpu_seconds(db.proc.pid) - cpu
        per_job = {k: round((after.get(k, 0) - before.get(k, 0)) / N_BURST, 4) for k in STATUS_KEYS}
        groups = after.get("Binlog_group_commits", 0) - before.get("Binlog_group_commits", 0)
        commits = after.get("Binlog_commits", 0) - before.get("Binlog_commits", 0)
        return {"jobs_per_s": round(rate), "per_job": per_job, "mariadbd_cpu_us_a_job": round(cpu / N_BURST * 1e6, 1),
                "commits_per_group_commit": round(commits / groups, 2) if groups else None}
    finally:
        w.close()


def _status(w: World, keys: tuple[str, ...] = STATUS_KEYS) -> dict[str, float]:
    return {name: float(value) for name, value in w.sql("SHOW GLOBAL STATUS") if name in keys}


# -- the run ---------------------------------------------------------------------------------------------------

def run(scale: int = SCALE) -> dict:
    """Private servers, the world, every part in order; the figures as a dict (bench.py stores them). A part that
    fails is recorded as {"error": ...} and the next one runs (a long run, on a tree others may be changing)."""
    began = time.monotonic()
    db = PrivateMariaDB(buffer_pool=BUFFER_POOL, extra_args=SERVER_ARGS)
    redis = PrivateRedis()
    out: dict = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "scale": scale, "burst": N_BURST,
                 "commit": _commit(), "machine": f"{platform.node()}, {os.cpu_count()} cores, "
                 f"{platform.python_version()}", "server": f"private mariadbd, buffer pool {BUFFER_POOL}, redo log 1G, "
                 "no binary log; private redis-server, no persistence", "repeat": REPEAT, "runs": RUNS}
    try:
        world = World(db.url, redis.url)
        try:
            _parts(out, world, db, {"mariadbd": lambda: db.proc.pid, "redis-server": lambda: redis.proc.pid})
        finally:
            world.close()
        if scale >= 1_000_000:
            part(out, "four_at_1m", "the issue's four pages on 1,000,000 jobs", four_at, db.url, redis.url, 1_000_000)
        part(out, "ceiling", "one job's writes, with and without the binary log", ceiling, db, redis.url)
    finally:
        redis.stop()
        _died(db, out)
        db.remove()
    out["seconds"] = round(time.monotonic() - began)
    return out


def _died(db: PrivateMariaDB, out: dict, during: str = "the end") -> None:
    """A private mariadbd that is gone before its end: its log since its last start (the crash's report), on stderr
    and in the figures."""
    if db.proc is None or db.proc.poll() is None:
        return
    with open(os.path.join(db.dir, "server.log"), errors="replace") as f:
        log = f.read()
    tail = log[log.rfind("[Note] Starting MariaDB"):][-12000:] if "[Note] Starting MariaDB" in log else log[-12000:]
    out.setdefault("mariadbd_died", []).append({"during": during, "exit": db.proc.returncode, "log": tail})
    print(f"scale: the private mariadbd ended with {db.proc.returncode} during {during}; its log:\n{tail}",
          file=sys.stderr)


def _parts(out: dict, world: World, db: PrivateMariaDB, servers: dict) -> None:
    scale = out["scale"]
    part(out, "fill", f"fill {scale:,} finished + {scale:,} pending", fill, world, scale, scale, guard=False)
    part(out, "index", "the due index filled by reconcile", index_fill, world, guard=False)
    t0 = time.monotonic()
    out["fill"]["rolled_up"] = roll_up(world)
    out["fill"]["roll_up_s"] = round(time.monotonic() - t0, 1)
    part(out, "sidekiq", "a Sidekiq-shaped schedule set", sidekiq_shaped, world.q.index.r, min(scale, 100_000))
    part(out, "disk", "table sizes", disk, world)
    low = world.sql("SELECT MIN(id) FROM {jobs}")[0][0]
    for key, what, fn, *args in (("reads", "operator reads", operator_reads, world, low + scale // 20),
                                 ("runner", "runner, empty and loaded", runner_figures, world, servers),
                                 ("rebuild", "rebuild under a stream", rebuild, world),
                                 ("purge", "purge under a stream", purge, world)):
        part(out, key, what, fn, *args)
        _revive(db, out, key)


def part(out: dict, key: str, what: str, fn, *args, guard: bool = True) -> None:
    """out[key] = fn(*args), with a line on stderr as it starts and ends; if it fails (and `guard`): its error."""
    t0 = time.monotonic()
    print(f"scale: {what} ...", file=sys.stderr, flush=True)
    out[key] = guarded(fn, *args) if guard else fn(*args)
    print(f"scale: {what}: {time.monotonic() - t0:.0f} s" + (f", FAILED: {out[key]['error']}" if
          isinstance(out[key], dict) and "error" in out[key] else ""), file=sys.stderr, flush=True)


def _revive(db: PrivateMariaDB, out: dict, key: str) -> None:
    """A mariadbd that died during a part (a crash of the server itself): its log's tail kept, and it is started
    again (InnoDB recovers its committed writes), so that the next parts still measure."""
    if db.proc.poll() is None:
        return
    _died(db, out, key)
    t0 = time.monotonic()
    db.start()
    out["mariadbd_died"][-1]["restart_s"] = round(time.monotonic() - t0, 1)


def guarded(fn, *args):
    """fn(*args), or {"error": ...} with the traceback on stderr when it fails."""
    try:
        return fn(*args)
    except Exception as exc:    # a figure missing is reported as such: the other parts' figures stand
        traceback.print_exc()
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def _commit() -> str:
    done = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True,
                          check=False)
    return done.stdout.strip() or "?"


# -- the table ---------------------------------------------------------------------------------------------

def report(r: dict, with_targets: bool = True) -> str:
    n = r["scale"]
    lines = [(f"delayq at scale (issue 26), {r['when']}, commit {r.get('commit', '?')}, {r['machine']}: {n:,} pending "
              f"+ {n:,} finished jobs; {r['server']}; took {r.get('seconds', '?')} s"), ""]
    lines += _fill_lines(r)
    for key, title, render in (("runner", "1. runner and enqueue", _runner_lines),
                               ("rebuild", "2. index rebuild", _rebuild_lines), ("index", "3. memory", _memory_lines),
                               ("reads", "4. operator reads", _read_lines), ("purge", "5. purge", _purge_lines),
                               ("ceiling", "6. one job's writes", _ceiling_lines)):
        x = r.get(key)
        lines += [f"{title}: no figure: {x['error']}", ""] if x and "error" in x else render(r, x) if x else []
    return "\n".join(lines + _crash_lines(r) + (_target_lines(r) if with_targets else []))


def _crash_lines(r: dict) -> list[str]:
    """The private mariadbd's own crashes, if any: when, how, and the statement it was running."""
    lines = []
    for crash in r.get("mariadbd_died", []):
        query = next((line.split(": ", 1)[-1] for line in crash["log"].splitlines() if line.startswith("Query (")), "?")
        lines.append(f"the private mariadbd crashed during {crash['during']} (exit {crash['exit']}; started again in "
                     f"{crash.get('restart_s', '-')} s), running: {query[:200]}")
    return [*lines, ""] if lines else []


def _fill_lines(r: dict) -> list[str]:
    f, ix, n = r["fill"], r["index"], r["scale"]
    took = f["finished_insert_s"] + f["finished_update_s"] + f["pending_s"]
    return [(f"fill ({FILL_THREADS} connections): {n:,} finished jobs inserted {f['finished_insert_s']} s, finished "
             f"with their attempt rows {f['finished_update_s']} s; {n:,} pending {f['pending_s']} s "
             f"({2 * n / max(took, 0.1):,.0f} jobs/s in all); ANALYZE {f['analyze_s']} s; the due index of "
             f"{ix['restored']:,} by reconcile {ix['seconds']} s; roll-up {f.get('roll_up_s')} s"), ""]


def _runner_lines(r: dict, x: dict) -> list[str]:
    names = {"burst": f"no-op burst of {r['burst']:,}, runner defaults", "io": f"{IO_N:,} jobs of {IO_MS} ms, "
             "--concurrency 64", "single": f"single enqueue, {ENQ_THREADS} threads, one client",
             "bulk": f"enqueue_many of {ENQ_BULK:,}"}
    lines = [f"1. runner and enqueue, jobs/s, median of {r['runs']} (empty prefix and the world alternated)",
             f"   {'':<40} {'empty':>9} {'loaded':>9} {'ratio':>7}"]
    lines += [f"   {names[k]:<40} {v['empty']:>9,} {v['loaded']:>9,} {v['ratio']:>7.2f}" for k, v in x.items()]
    cpu = x.get("burst", {}).get("cpu_us_a_job")
    if cpu:
        lines.append("   the burst's CPU a job from the runner's start, empty / loaded: " + ", ".join(
            f"{name} {c['empty']} / {c['loaded']} µs" for name, c in cpu.items()))
    server = x.get("bulk", {}).get("server")
    if server:
        lines.append("   around each enqueue_many, median, empty / loaded: " + ", ".join(
            f"{k.replace('Innodb_', '')} {server['empty'].get(k, 0):,.0f} / {server['loaded'].get(k, 0):,.0f}"
            for k in BULK_KEYS))
    return [*lines, ""]


def _window(w: dict) -> str:
    if not w.get("jobs"):
        return "no stream job was due then"
    return (f"lateness p50 {w['p50_ms']} / p99 {w['p99_ms']} / max {w['max_ms']} ms, longest gap between "
            f"completions {w['longest_gap_ms']} ms (ending {w.get('longest_gap_ended_s', '?')} s in; {w['jobs']} jobs)")


def _stream_lines(x: dict) -> list[str]:
    """The runner's stream while a part ran (rebuild, purge), and in the 3 s before it."""
    return [f"   runner meanwhile, {x['rate']} jobs/s due 1 s after enqueue: {_window(x['during'])}",
            f"   the 3 s before: {_window(x['before'])}", ""]


def _rebuild_lines(r: dict, x: dict) -> list[str]:
    return [(f"2. index rebuild (the due index deleted, `compensate --rebuild now`): {x['seconds']} s, "
             f"{x['restored']:,} restored of {x['scanned']:,} pending rows"), *_stream_lines(x)]


def _memory_lines(r: dict, ix: dict) -> list[str]:
    lines = [(f"3. Redis: used_memory +{(ix['used_memory_after'] - ix['used_memory_before']) / 2**20:,.1f} MiB for "
              f"{ix['restored']:,} pending jobs = {ix['bytes_a_job']} bytes a job; MEMORY USAGE of the due set / "
              f"ZCARD = {ix['due_set_bytes_a_member']} bytes")]
    sk = r.get("sidekiq", {})
    lines.append(f"   a Sidekiq-shaped schedule set: no figure: {sk.get('error')}" if "error" in sk else
                 f"   a Sidekiq-shaped schedule set ({sk['member_bytes']}-byte JSON member, sidekiq#4923), "
                 f"{sk['jobs']:,} jobs: {sk['bytes_a_job']} bytes a job")
    if "error" in r.get("disk", {}):
        return [*lines, f"   MariaDB: no figure: {r['disk']['error']}", ""]
    for table, t in r["disk"].items():
        idx = ", ".join(f"{k} {v:.0f}" for k, v in t["per_index_bytes_a_row"].items())
        lines.append(f"   MariaDB {table}: {t['rows']:,} rows, {(t['data_bytes'] + t['index_bytes']) / 2**20:,.0f} MiB "
                     f"= {t['bytes_a_row']} bytes a row (data {t['data_bytes_a_row']}); per index: {idx}")
    return [*lines, ""]


def _ms(t: dict) -> str:
    return f"no figure: {t['error']}" if "error" in t else f"{t['p50_ms']:>8} {t['p95_ms']:>8} {t['max_ms']:>8}"


def _read_lines(r: dict, x: dict) -> list[str]:
    n = 2 * r["scale"]
    if "error" in x["pages"]:
        lines = [f"4. operator reads on {n:,} jobs: the dashboard's pages: no figure: {x['pages']['error']}"]
    else:
        lines = [f"4. operator reads on {n:,} jobs: " + web_page.report(
            {"jobs": n, "repeat": r["repeat"], "pages": x["pages"]}).split(": ", 1)[1]]
    worlds = [(f"{n:,} jobs", x["four"])]
    if r.get("four_at_1m"):
        worlds.append(("1,000,000 jobs", r["four_at_1m"].get("four", r["four_at_1m"])))
    for where, four in worlds:
        lines.append(f"   the issue's four pages on {where} (p50 / p95 / max ms):")
        lines += ([f"     no figure: {four['error']}"] if "error" in four else
                  [f"     {k:<36} {_ms(v)}" for k, v in four.items()])
    lines.append("   commands, ms p50 / p95 / max: in this process (execute, output captured) | the whole CLI process")
    lines += [f"     delayq {k:<18} {_ms(v['in_process'])} | {_ms(v['process'])}" for k, v in x["commands"].items()]
    if "process_start" in x:
        lines.append(f"     {'python -m delayq --version':<25} {'(no query: the start of a process)':>26} | "
                     f"{_ms(x['process_start'])}")
    return [*lines, ""]


def _purge_lines(r: dict, x: dict) -> list[str]:
    lines = [(f"5. purge (`delayq purge --older-than 1d --batch 500 --yes`): {x['deleted']:,} jobs and "
              f"{x['attempts_deleted']:,} attempts in {x['seconds']} s = {x['jobs_per_s']:,} jobs/s"),
             *_stream_lines(x)]
    if x.get("server"):
        short = lambda k: k.replace("Innodb_", "").replace("buffer_pool_", "bp_")  # noqa: E731
        for when in ("gap", "run"):
            lines.append(f"     server, {'the longest gap (and 1 s before)' if when == 'gap' else 'the whole purge'}: "
                         + ", ".join(f"{short(k)} {x['server'][when][k]:,.0f}" for k in SAMPLE_KEYS))
        lines += [f"     running then (50 ms or longer): {text}" for text in x["server"]["gap"]["statements"]]
        if x["server"].get("longest_statement"):
            lines.append(f"     the longest statement seen: {x['server']['longest_statement']}")
    return lines


def _ceiling_lines(r: dict, c: dict) -> list[str]:
    lines = [(f"6. one job's writes on one primary: a burst of {r['burst']:,} on an empty prefix, per job from "
              f"enqueue to outcome; a 4 KiB write + fdatasync on this disk: {c['fsync_ms']} ms (at most "
              f"{1000 / c['fsync_ms']:,.0f} flushes a second)")]
    for name in ("no_binlog", "binlog"):
        x, p = c[name], c[name]["per_job"]
        syncs = p["Innodb_data_fsyncs"] + p["Binlog_group_commits"]     # sync_binlog=1: one per binlog group commit
        binlog = (f" (InnoDB {p['Innodb_data_fsyncs']} + binlog {p['Binlog_group_commits']}, "
                  f"{x['commits_per_group_commit']} commits a binlog group commit)" if x["commits_per_group_commit"] else "")
        lines.append(f"   {name.replace('_', ' ')}: {x['jobs_per_s']:,} jobs/s; rows written {p['Handler_write']} "
                     f"inserted + {p['Handler_update']} updated; fsyncs {syncs:.4f}{binlog}, {1 / syncs if syncs else 0:,.0f} "
                     f"jobs a fsync; redo {p['Innodb_os_log_written']:,.0f} bytes; mariadbd CPU "
                     f"{x['mariadbd_cpu_us_a_job']} µs = {2e6 / x['mariadbd_cpu_us_a_job']:,.0f} jobs/s on 2 cores of its own")
    return [*lines, ""]


def targets(r: dict) -> list[tuple]:
    """(what, figure, met) for issue 26's targets; met is None where a part has no figure."""
    def runner(key: str):
        v = r["runner"][key]
        return f"{v['ratio']:.2f}x", v["ratio"] >= 1 - FLAT

    def late():
        p99 = r["rebuild"]["during"]["p99_ms"]
        return f"{p99} ms", p99 < LATE_P99_MS

    def slowest(timings: list[dict], what: str = "slowest"):
        worst = max(t["p95_ms"] for t in timings)
        return f"{worst} ms {what}", worst < P95_MS and all("error" not in t for t in timings)

    def stall():
        ms = r["purge"]["during"]["stall_ms"]
        return f"{ms} ms", ms < STALL_MS
    checks = [(f"{k} within 10% of empty", lambda k=k: runner(k)) for k in ("burst", "io", "single", "bulk")]
    checks += [("rebuild: lateness p99 < 1 s", late),
               ("every dashboard page p95 < 100 ms", lambda: slowest(r["reads"]["pages"])),
               ("the issue's four pages p95 < 100 ms", lambda: slowest(list(r["reads"]["four"].values()))),
               *([("the issue's four pages p95 < 100 ms at 1M",
                   lambda: slowest(list(r["four_at_1m"]["four"].values())))] if "four_at_1m" in r else []),
               ("stats, list, show p95 < 100 ms (in process)",
                lambda: slowest([v["in_process"] for v in r["reads"]["commands"].values()])),
               ("purge: no runner stall over 100 ms", stall)]
    out = []
    for what, check in checks:
        try:
            out.append((what, *check()))
        except (KeyError, TypeError, ValueError):     # the part failed, or measured nothing
            out.append((what, "no figure", None))
    return out


def _target_lines(r: dict) -> list[str]:
    marks = {True: "met", False: "NOT MET", None: "n/a"}
    return ["targets (issue 26)"] + [f"  {what:<46} {figure:>16}  {marks[met]}" for what, figure, met in targets(r)]


def main(argv: list[str]) -> None:
    """Run and print; `--report`: print the table of the last run (results/scale.json) again."""
    path = os.path.join(HERE, "results", "scale.json")
    if argv == ["--report"]:
        with open(path) as f:
            print(report(json.load(f)))
        return
    result = run()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=2)
    print(report(result))


if __name__ == "__main__":
    main(sys.argv[1:])
