"""Burst benchmark: N no-op jobs due at one moment T, one `run_due.py --for` process.

Figure: N / (time from T until the last job's outcome is committed), read from
the rows' own finished_at. Also: bulk enqueue rate and the runner's peak RSS.
Runs on MySQL+Redis, MySQL alone and SQLite; each on its own prefix, cleaned up after.

    make bench              # BENCH_N=20000 by default
    BENCH_N=2000 make bench
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "lib"), ROOT]

import delayq  # noqa: E402
from delayq.config import Config  # noqa: E402

N = int(os.environ.get("BENCH_N", "20000"))
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REDIS = os.environ.get("DELAYQ_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
BATCH = int(os.environ.get("BENCH_BATCH", "500"))


def backends(tmp: str) -> list[tuple[str, str, str | None]]:
    return [("mysql+redis", MYSQL, REDIS), ("mysql", MYSQL, None), ("sqlite", f"sqlite:///{tmp}/bench.db", None)]


def burst(name: str, database_url: str, redis_url: str | None) -> dict:
    prefix = "bench" + secrets.token_hex(3)
    config = Config(database_url=database_url, redis_url=redis_url, allowed_modules=("examples",), prefix=prefix)
    q = delayq.connect(config)
    try:
        q.store.migrate(time.time())
        lead = 2.0 + N / 4000
        start = q.clock.now()
        due = start + lead
        t0 = time.perf_counter()
        q.enqueue_many({"call": "examples.shop:noop", "at": due} for _ in range(N))
        enqueue_rate = N / (time.perf_counter() - t0)
        if q.clock.now() > due:
            print(f"  warning: enqueue outlasted the lead time on {name}", file=sys.stderr)
        env = dict(os.environ, DELAYQ_DATABASE_URL=database_url, DELAYQ_PREFIX=prefix,
                   DELAYQ_ALLOWED_MODULES="examples", PYTHONPATH=ROOT)
        env.pop("DELAYQ_REDIS_URL", None)
        if redis_url:
            env["DELAYQ_REDIS_URL"] = redis_url
        runner = subprocess.Popen([sys.executable, os.path.join(ROOT, "bin", "run_due.py"), "--for", "600",
                                   "--batch", str(BATCH), "--interval", "0.05", "--json"],
                                  env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        rss = wait_done(q, prefix, runner, N)
        runner.send_signal(signal.SIGTERM)
        summary = json.loads(runner.communicate(timeout=60)[0])
        last = last_finished(q, prefix)
        return {"backend": name, "jobs": N, "jobs_per_s": round(N / (last - due)), "seconds": round(last - due, 3),
                "enqueue_per_s": round(enqueue_rate), "runner_peak_rss_mb": rss, "succeeded": summary["succeeded"]}
    finally:
        drop(q, prefix)
        q.close()


def count_done(q, prefix: str) -> int:
    with q.store.tx() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {prefix}_jobs WHERE status = 'succeeded'")
        return cur.fetchone()[0]


def last_finished(q, prefix: str) -> float:
    with q.store.tx() as cur:
        cur.execute(f"SELECT MAX(finished_at) FROM {prefix}_jobs")
        return float(cur.fetchone()[0])


def wait_done(q, prefix: str, runner: subprocess.Popen, n: int) -> float:
    peak = 0.0
    deadline = time.time() + 600
    while count_done(q, prefix) < n:
        if runner.poll() is not None or time.time() > deadline:
            raise SystemExit(f"bench: runner stopped before finishing ({count_done(q, prefix)}/{n})")
        peak = max(peak, peak_rss(runner.pid))
        time.sleep(0.2)
    return round(max(peak, peak_rss(runner.pid)), 1)


def peak_rss(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def drop(q, prefix: str) -> None:
    with q.store.tx() as cur:
        for table in ("jobs", "attempts", "steps", "migrations"):
            cur.execute(f"DROP TABLE IF EXISTS {prefix}_{table}")
    if getattr(q.index, "r", None) is not None:
        keys = list(q.index.r.scan_iter(match="{" + prefix + ":*"))
        if keys:
            q.index.r.delete(*keys)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rows = [burst(*b) for b in backends(tmp)]
    print(f"\nburst of {N} due no-op jobs, one run_due.py --for process (batch {BATCH}), {platform.node()}, "
          f"{os.cpu_count()} cores")
    print(f"{'backend':<12} {'jobs/s':>8} {'seconds':>8} {'enqueue/s':>10} {'peak RSS MB':>12}")
    for r in rows:
        print(f"{r['backend']:<12} {r['jobs_per_s']:>8} {r['seconds']:>8} {r['enqueue_per_s']:>10} {r['runner_peak_rss_mb']:>12}")
    os.makedirs(os.path.join(ROOT, "benchmarks", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benchmarks", "results", "latest.json"), "w") as out:
        json.dump({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "n": N, "batch": BATCH,
                   "results": rows}, out, indent=2)


if __name__ == "__main__":
    main()
