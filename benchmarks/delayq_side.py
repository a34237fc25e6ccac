"""delayq's side of `make bench`: burst, enqueue, lateness, backlog and the write-set ceiling.

Each function takes the URLs to use and returns a dict of figures. Jobs are
no-ops (examples.shop:noop); a runner is the real `bin/run_due.py --for`
process; outcomes and times are read back from the database, so what is
measured is "committed", not "called".
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "lib"), ROOT]

from delayq import recovery
import delayq  # noqa: E402
from delayq.config import Config  # noqa: E402
from delayq.store.queries import TABLES  # noqa: E402
from procfs import children  # noqa: E402

NOOP = "examples.shop:noop"
PING = "examples.shop:Orders.ping"      # a no-op of another name: a warm-up job, left out of the figures
BATCH = int(os.environ.get("BENCH_BATCH", "500"))
COLUMNS = "queue, callable, args, status, attempts, max_attempts, ladder, due_at, priority, created_at, updated_at"


class World:
    """One prefix on one database (and Redis), cleaned up by close()."""

    def __init__(self, database_url: str, redis_url: str | None):
        self.prefix = "bench" + secrets.token_hex(3)
        self.config = Config(database_url=database_url, redis_url=redis_url, allowed_modules=("examples",),
                             prefix=self.prefix)
        self.q = delayq.open_manager(self.config)
        self.q.store.migrate(time.time())
        # no DELAYQ_* setting of the caller's shell (DELAYQ_CONCURRENCY, DELAYQ_TIMEOUT, ...) leaks into a runner:
        # a runner given no flags runs with delayq's own defaults
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DELAYQ_")}
        self.env.update(DELAYQ_DATABASE_URL=database_url, DELAYQ_PREFIX=self.prefix,
                        DELAYQ_ALLOWED_MODULES="examples",
                        PYTHONPATH=os.path.join(ROOT, "lib") + os.pathsep + ROOT)   # this checkout's delayq first
        if redis_url:
            self.env["DELAYQ_REDIS_URL"] = redis_url

    @property
    def placeholder(self) -> str:
        """The driver's positional placeholder, for the bench's own SQL."""
        return "?" if self.q.store.dialect == "sqlite" else "%s"

    def sql(self, text: str, args=()) -> list:
        with self.q.store.tx() as cur:
            cur.execute(text.replace("{jobs}", self.prefix + "_jobs").replace("{attempts}", self.prefix + "_attempts"),
                        args)
            return cur.fetchall()

    def runner(self, *flags: str) -> subprocess.Popen:
        """`run_due.py --for 3600` with `flags`; none: delayq's defaults (16 threads in one worker process)."""
        return subprocess.Popen([sys.executable, os.path.join(ROOT, "bin", "run_due.py"), "--for", "3600",
                                 "--json", "--quiet", *flags],
                                env=self.env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def wait_running(self, runner: subprocess.Popen, timeout: float = 60) -> None:
        """Until the runner has run one job (examples.shop:Orders.ping, due at once): it is up and claiming."""
        job = self.q.enqueue(PING).id
        deadline = time.monotonic() + timeout
        while self.sql(f"SELECT status FROM {{jobs}} WHERE id = {self.placeholder}", (job,))[0][0] != "succeeded":
            if runner.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the runner did not start running jobs")
            time.sleep(0.02)

    def wait_committed(self, due: float, n: int, runner: subprocess.Popen, timeout: float = 900,
                       interval: float = 0.005) -> tuple[float, float | None]:
        """Poll every `interval` until no job due by `due` is pending or running, i.e. every outcome is
        committed (two range lookups on by_claim: the bench's jobs have priority 0; cheap however many rows the
        table holds), then check that
        all n succeeded. Returns (that moment on the queue's clock, the runner's peak RSS in MB: the sum over
        the runner and its worker processes, tree_peak_rss); the moment is at most one poll late."""
        ph = self.placeholder
        query = (f"SELECT 1 FROM {{jobs}} WHERE (status = 'pending' AND queue = 'default' AND priority = 0 "
                 f"AND due_at <= {ph}) OR status = 'running' LIMIT 1")
        peak, deadline, sampled = 0.0, time.time() + timeout, 0.0
        while self.sql(query, (due,)):
            if runner.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"runner stopped or timed out before {n} jobs were done")
            if time.monotonic() - sampled > 0.1:
                peak, sampled = max(peak, tree_peak_rss(runner.pid) or 0.0), time.monotonic()
            time.sleep(interval)
        done = self.q.clock.now()
        succeeded = self.sql("SELECT COUNT(*) FROM {jobs} WHERE status = 'succeeded'")[0][0]
        if succeeded != n:
            raise RuntimeError(f"{succeeded} of {n} jobs succeeded")
        rss = tree_peak_rss(runner.pid)
        return done, (max(peak, rss) if rss is not None else None)

    def close(self) -> None:
        with self.q.store.tx() as cur:
            for table in TABLES:
                cur.execute(f"DROP TABLE IF EXISTS {self.prefix}_{table}")
        r = getattr(self.q.index, "r", None)
        if r is not None:
            keys = [k for p in ("{" + self.prefix + ":*", "{" + self.prefix + "}:*") for k in r.scan_iter(match=p)]
            if keys:
                r.delete(*keys)
        self.q.close()


def stop(runner: subprocess.Popen) -> None:
    runner.send_signal(signal.SIGTERM)
    try:
        runner.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        runner.kill()
        runner.communicate()


def peak_rss(pid: int) -> float | None:
    """VmHWM of a live process in MB; None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def tree_peak_rss(pid: int) -> float | None:
    """The sum of the peak RSS (VmHWM) of a process and its live children, in MB: a runner and its worker
    processes. A forked worker shares pages with the runner, so the sum counts them twice: an upper bound."""
    own = peak_rss(pid)
    if own is None:
        return None
    return own + sum(peak_rss(child) or 0.0 for child in children(pid))


def burst(database_url: str, redis_url: str | None, n: int, backlog: int = 0) -> dict:
    """N no-op jobs due at one moment T; one runner with delayq's defaults (no --concurrency, --processes,
    --batch or --interval); N / (T -> last outcome committed).

    The end is seen by polling for jobs still pending or running (every 5 ms), not taken from
    finished_at: a job's finished_at is when it returned, before its outcome was committed."""
    w = World(database_url, redis_url)
    try:
        extra = {}
        if backlog:
            extra = fill_backlog(w, backlog)
        due = w.q.clock.now() + 2.0 + n / 5000
        w.q.enqueue_many({"call": NOOP, "at": due} for _ in range(n))
        if w.q.clock.now() > due:
            raise RuntimeError("enqueue outlasted the lead time: raise it")
        runner = w.runner()
        committed, rss = w.wait_committed(due, n, runner)
        stop(runner)
        returned = float(w.sql("SELECT MAX(finished_at) FROM {jobs} WHERE status = 'succeeded'")[0][0])
        return {"jobs_per_s": round(n / (committed - due)), "seconds": round(committed - due, 3),
                "last_returned_s": round(returned - due, 3),
                "runner_peak_rss_mb": round(rss, 1) if rss is not None else None, **extra}
    finally:
        w.close()


def fill_backlog(w: World, count: int) -> dict:
    """`count` pending jobs due in a day, in the table (doubled in SQL: a fixture) and in the index; times the rebuild."""
    w.q.enqueue(NOOP, delay=86400)
    ph = w.placeholder
    total = 1
    while total < count:
        with w.q.store.tx() as cur:
            cur.execute(f"INSERT INTO {w.prefix}_jobs ({COLUMNS}) SELECT {COLUMNS} FROM {w.prefix}_jobs LIMIT {ph}",
                        (count - total,))
            total += cur.rowcount
    t0 = time.monotonic()
    recovery.reconcile(w.q.store, w.q.index, w.q.clock)
    return {"backlog": count, "rebuild_seconds": round(time.monotonic() - t0, 1)}


def enqueue(database_url: str, redis_url: str | None, n: int) -> dict:
    """Delayed enqueue rate: the Python API one by one, and bulk (enqueue_many)."""
    w = World(database_url, redis_url)
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            w.q.enqueue(NOOP, delay=3600)
        one = n / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        w.q.enqueue_many({"call": NOOP, "delay": 3600} for _ in range(n))
        bulk = n / (time.perf_counter() - t0)
        return {"one_by_one_per_s": round(one), "bulk_per_s": round(bulk)}
    finally:
        w.close()


def lateness(database_url: str, redis_url: str | None, rate: int, seconds: float, delay: float = 1.0) -> dict:
    """A steady stream of `rate` jobs/s for `seconds`, each due `delay` s after it is enqueued; one runner with --for.

    Lateness = attempt start (attempts.started_at) - due time (jobs.due_at), from the database."""
    w = World(database_url, redis_url)
    try:
        runner = w.runner("--interval", "0.05")
        sent, last_due = produce(w, rate, seconds, delay)
        w.wait_committed(last_due, sent, runner, timeout=300, interval=0.1)
        stop(runner)
        late = sorted(row[0] * 1000 for row in w.sql(
            "SELECT a.started_at - j.due_at FROM {attempts} a JOIN {jobs} j ON j.id = a.job_id"))
        return {"jobs": len(late), "p50_ms": round(_pct(late, 50), 1), "p99_ms": round(_pct(late, 99), 1),
                "max_ms": round(late[-1], 1)}
    finally:
        w.close()


def produce(w: World, rate: float, seconds: float, delay: float, job_of=lambda i: {"call": NOOP}) -> tuple[int, float]:
    """Enqueue a steady stream, `rate` jobs/s for `seconds`, job i (job_of(i): call and args) due `delay` s
    after its enqueue, in bulk every 50 ms; returns (jobs sent, the last due time)."""
    per_tick = max(1, round(rate * 0.05))
    producer = delayq.open_manager(w.config)
    start = time.monotonic()
    sent, last_due = 0, 0.0
    try:
        while sent < rate * seconds:
            pause = start + (sent / rate) - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            now = producer.clock.now()
            producer.enqueue_many({**job_of(sent + i), "at": now + delay + i / rate} for i in range(per_tick))
            sent, last_due = sent + per_tick, now + delay + (per_tick - 1) / rate
    finally:
        producer.close()
    return sent, last_due


def _pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    k = max(0, min(len(values) - 1, int(round(p / 100 * len(values) + 0.5)) - 1))
    return values[k]
