"""delayq's side of the issue-10 figures in `make bench`: enqueueing through the client an application holds.

- threads: single enqueues (a durable commit each) through one `delayq.connect()` client, from one
  thread and then from 8 threads sharing it; jobs/s of each (all threads start together at a barrier,
  the clock stops when the last one is done). Single enqueues that arrive together share one write
  (grouping.py: one transaction, one commit, one ZADD for the group) where one thread waits for each of
  its own. Also the CPU each phase costs a job (this process, mariadbd and redis-server, in µs), and the
  cores the one-thread phase keeps busy.
- bulk: `client.enqueue_many` in-process, and `bin/enqueue_delayed.py --from-file` as a user runs it
  (process start, validation and the write: the whole command, timed from outside).
- in_transaction: the lateness an enqueue in the application's own transaction adds. Jobs due at once
  are enqueued one at a time, spaced 20-150 ms at random (so they fall anywhere in the runner's cycle),
  alternately plain (`client.enqueue`) and on the application's PyMySQL connection
  (`client.enqueue(..., connection=conn)` then `conn.commit()`), with a `run_due.py --for` runner up
  (run twice by make bench: with the runner's defaults, and with --interval 0.05 as a busy runner claims).
  Delay = the attempt's start (from the database) - the moment the enqueue (plain) or the commit
  (transaction) returned, on the queue's clock. A plain job's index entry is written by the enqueue; a
  transaction's entry is added after the commit by the runner's outbox sweep (RedisIndex.catch_up, made
  by claims at most every 0.5 s). A third kind, in a transaction but due 2 s later (enqueued after the
  others), shows whether the outbox is done by its due time (delay = start - due there).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from urllib.parse import urlsplit

import pymysql

from delayq_side import NOOP, ROOT, World, _pct, stop
from procfs import cpu_seconds, pid_of

import delayq


def threads(database_url: str, redis_url: str | None, one: int, each: int, count: int = 8) -> dict:
    """`one` enqueues from one thread, then `each` from each of `count` threads, through one shared client; and the
    CPU each phase costs a job, in µs, summed over this process, mariadbd and redis-server."""
    w = World(database_url, redis_url)
    client = delayq.connect(w.config)
    try:
        _enqueue_from(client, count, 10)                    # warm-up: the pool's connections, lazy imports
        pids = [os.getpid(), pid_of("mariadbd"), pid_of("redis-server") if redis_url else None]
        (took, single_cpu), (shared_took, shared_cpu) = (_timed(pids, client, 1, one),
                                                          _timed(pids, client, count, each))
        single, shared = one / took, count * each / shared_took
        written = w.sql("SELECT COUNT(*) FROM {jobs}")[0][0]
        if written != count * 10 + one + count * each:
            raise RuntimeError(f"{written} rows written, {count * 10 + one + count * each} enqueued")
        return {"one_thread_per_s": round(single), f"{count}_threads_per_s": round(shared),
                "ratio": round(shared / single, 2), "one_thread_cores_busy": round(single_cpu / took, 2),
                "one_thread_cpu_us": round(single_cpu / one * 1e6), f"{count}_threads_cpu_us":
                round(shared_cpu / (count * each) * 1e6)}
    finally:
        client.close()
        w.close()


def grouping(database_url: str, redis_url: str | None, count: int = 32, each: int = 125) -> dict:
    """`count` threads enqueueing through one client, their writes grouped (client.enqueue), and the same with
    each job written alone in its own transaction and ZADD (Manager.insert, as the client did before group
    commit): jobs/s and the CPU a job costs (this process, mariadbd, redis-server; µs) of each."""
    w = World(database_url, redis_url)
    client = delayq.connect(w.config)
    manager = client.manager

    class Alone:
        def enqueue(self, call: str, delay: float) -> None:
            now = manager.clock.now()
            manager.insert([manager.validate({"call": call, "delay": delay}, now)], now)

    try:
        _enqueue_from(client, count, 5)
        pids = [os.getpid(), pid_of("mariadbd"), pid_of("redis-server") if redis_url else None]
        out = {}
        for name, how in (("grouped", client), ("alone", Alone())):
            took, cpu = _timed(pids, how, count, each)
            out[name] = {"per_s": round(count * each / took), "cpu_us": round(cpu / (count * each) * 1e6)}
        return out
    finally:
        client.close()
        w.close()


def _timed(pids: list[int | None], client, count: int, each: int) -> tuple[float, float]:
    """(seconds, CPU seconds of `pids`) for `count` threads enqueueing `each` jobs apiece."""
    before = sum(cpu_seconds(p) for p in pids)
    took = _enqueue_from(client, count, each)
    return took, sum(cpu_seconds(p) for p in pids) - before


def _enqueue_from(client, count: int, each: int) -> float:
    """Seconds for `count` threads to enqueue `each` delayed no-op jobs apiece, started together."""
    gate = threading.Barrier(count + 1)
    errors: list[BaseException] = []

    def work() -> None:
        gate.wait()
        try:
            for _ in range(each):
                client.enqueue(NOOP, delay=3600)
        except BaseException as exc:     # reported below: a thread must not die silently
            errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(count)]
    for t in workers:
        t.start()
    gate.wait()
    t0 = time.perf_counter()
    for t in workers:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{len(errors)} enqueue thread(s) failed: {errors[0]!r}")
    return elapsed


def bulk(database_url: str, redis_url: str | None, n: int) -> dict:
    """n delayed jobs through client.enqueue_many, and n more through the CLI's --from-file."""
    w = World(database_url, redis_url)
    client = delayq.connect(w.config)
    try:
        client.enqueue_many({"call": NOOP, "delay": 3600} for _ in range(100))     # warm-up, not timed
        t0 = time.perf_counter()
        client.enqueue_many({"call": NOOP, "delay": 3600} for _ in range(n))
        in_process = n / (time.perf_counter() - t0)
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
            f.writelines(json.dumps({"call": NOOP, "delay": 3600}) + "\n" for _ in range(n))
            f.flush()
            t0 = time.perf_counter()
            subprocess.run([sys.executable, os.path.join(ROOT, "bin", "enqueue_delayed.py"), "--from-file", f.name,
                            "--json"], env=w.env, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            cli = n / (time.perf_counter() - t0)
        written = w.sql("SELECT COUNT(*) FROM {jobs}")[0][0]
        if written != 2 * n + 100:
            raise RuntimeError(f"{written} rows written, {2 * n + 100} enqueued")
        return {"enqueue_many_per_s": round(in_process), "from_file_per_s": round(cli)}
    finally:
        client.close()
        w.close()


KINDS = ("plain", "transaction", "transaction, due in 2 s")


def in_transaction(database_url: str, redis_url: str | None, samples: int, flags: tuple[str, ...] = ()) -> dict:
    """`samples` jobs of each kind, a runner `run_due.py --for` with `flags` (none: its defaults). Plain and
    transaction alternate; the jobs due in 2 s come after them (their due times would wake the runner early
    for the others)."""
    w = World(database_url, redis_url)
    client = delayq.connect(w.config)
    conn = _app_connection(database_url)
    runner = w.runner(*flags)
    try:
        w.wait_running(runner)
        rng = random.Random(11)
        sent: dict[int, tuple[str, float]] = {}
        for kind in [KINDS[k % 2] for k in range(2 * samples)] + [KINDS[2]] * samples:
            if kind == "plain":
                job = client.enqueue(NOOP)
            else:
                conn.cursor().execute("SELECT 1")           # the application's own work in its transaction
                job = client.enqueue(NOOP, connection=conn, delay=2.0 if kind == KINDS[2] else None)
                conn.commit()
            sent[job.id] = (kind, job.due_at if kind == KINDS[2] else client.manager.clock.now())
            time.sleep(rng.uniform(0.02, 0.15))
        _wait_done(w, list(sent), runner)
        delays: dict[str, list[float]] = {kind: [] for kind in KINDS}
        for job_id, started in w.sql("SELECT job_id, started_at FROM {attempts}"):
            if job_id in sent:
                kind, mark = sent[job_id]
                delays[kind].append((float(started) - mark) * 1000)
        out: dict = {"flags": " ".join(flags)}
        for kind, values in delays.items():
            values.sort()
            out[kind] = {"jobs": len(values), "p50_ms": round(_pct(values, 50), 1),
                         "p99_ms": round(_pct(values, 99), 1), "max_ms": round(values[-1], 1)}
        out["added_p50_ms"] = round(out["transaction"]["p50_ms"] - out["plain"]["p50_ms"], 1)
        out["added_p99_ms"] = round(out["transaction"]["p99_ms"] - out["plain"]["p99_ms"], 1)
        return out
    finally:
        stop(runner)
        conn.close()
        client.close()
        w.close()


def _app_connection(database_url: str):
    """The application's own PyMySQL connection (not delayq's), a transaction open until commit."""
    u = urlsplit(database_url)
    return pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root", password=u.password or "",
                           database=u.path.lstrip("/"), autocommit=False)


def _wait_done(w: World, ids: list[int], runner, timeout: float = 60) -> None:
    """Until every job in `ids` has succeeded (polled every 20 ms)."""
    marks = ", ".join([w.placeholder] * len(ids))
    deadline = time.monotonic() + timeout
    while w.sql(f"SELECT COUNT(*) FROM {{jobs}} WHERE id IN ({marks}) AND status = 'succeeded'", ids)[0][0] < len(ids):
        if runner.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"runner stopped or timed out before {len(ids)} jobs ran")
        time.sleep(0.02)
