"""Scaling figures (part of `make bench`): throughput with 1, 2 and 4 runner processes (`bin/run_due.py --for`),
on one MariaDB + a plain Redis and on a Redis Cluster of 3 masters (+1 replica each, scripts/redis_topology.py).

Two workloads, each N jobs due at one moment T, spread over 6 queues that every runner serves (on the Cluster
the 6 queues live on all 3 masters; one queue lives on one master):
  burst   no-op jobs (BENCH_SCALING_N, default 20,000)
  io      2,000 jobs that each wait 20 ms (examples.shop:hang on /dev/null), as a job waiting on an upstream
Throughput = N / (T -> the last outcome committed), polled on the database every 5 ms. Beside it, the CPU
time the runners, the local mariadbd and the Redis servers spent from T to the end, per job (/proc).

    .venv/bin/python benchmarks/scaling.py            # about 2 minutes (BENCH_RUNS=3: medians of 3)
    BENCH_SCALING_N=5000 .venv/bin/python benchmarks/scaling.py

`--concurrency` is passed to the runners (BENCH_CONCURRENCY, default 8) only when run_due.py has the flag.
Batches: 500 jobs a pass, except io with a runner that runs one job at a time: 10 a pass, else the first
runner would claim 500 jobs (10 s of waiting) and leave the others idle.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [HERE, ROOT, os.path.join(ROOT, "lib")]

from delayq_side import World  # noqa: E402
from procfs import cpu_seconds  # noqa: E402

QUEUES = [f"q{i}" for i in range(6)]
RUNNERS = (1, 2, 4)
N_BURST = int(os.environ.get("BENCH_SCALING_N", "20000"))
N_IO, IO_WAIT = 2000, 0.02
MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")


def concurrency_args() -> list[str]:
    """--concurrency N for runners that have it (the concurrent runner), nothing for today's runner."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "bin", "run_due.py"), "--help"], capture_output=True,
                          text=True, cwd=ROOT)
    return ["--concurrency", os.environ.get("BENCH_CONCURRENCY", "8")] if "--concurrency" in done.stdout else []


def start_runner(w: World, batch: int, extra: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "bin", "run_due.py"), "--for", "3600", "--batch",
                             str(batch), "--interval", "0.05", "--queue", ",".join(QUEUES), "--quiet", *extra],
                            env=w.env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_committed(w: World, due: float, runners: list[subprocess.Popen], timeout: float = 900) -> float:
    """Poll every 5 ms until no job due by `due` is pending or running; that moment on the queue's clock."""
    query = ("SELECT 1 FROM {jobs} WHERE (status = 'pending' AND due_at <= %s) OR status = 'running' LIMIT 1")
    deadline = time.monotonic() + timeout
    while w.sql(query, (due,)):
        dead = [r for r in runners if r.poll() is not None]
        if dead or time.monotonic() > deadline:
            why = dead[0].stderr.read().strip()[-300:] if dead else "timed out"
            raise RuntimeError(f"runners stopped before the jobs were done: {why}")
        time.sleep(0.005)
    return w.q.clock.now()


def mariadb_pids() -> list[int]:
    """The local mariadbd or mysqld, when the database runs on this machine."""
    found = subprocess.run(["pgrep", "-x", "mariadbd|mysqld"], capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in found]


class CpuSplit:
    """CPU seconds spent by the runners, the database and Redis between start() and stop()."""

    def __init__(self, runners: list[subprocess.Popen], redis_pids: list[int]):
        self.groups = {"runners": [p.pid for p in runners], "mariadb": mariadb_pids(), "redis": list(redis_pids)}

    def _read(self) -> dict[str, float]:
        return {name: sum(cpu_seconds(pid) for pid in pids) for name, pids in self.groups.items()}

    def start(self) -> None:
        self.before = self._read()

    def per_job_us(self, n: int) -> dict[str, int]:
        after = self._read()
        return {name: round((after[name] - self.before[name]) / n * 1e6) for name in after}


def run(database_url: str, redis_url: str, workload: str, runners: int, extra: list[str],
        redis_pids: list[int] = ()) -> dict:
    """jobs/s for one workload with `runners` processes, and CPU microseconds a job by process kind."""
    w = World(database_url, redis_url)
    try:
        n = N_BURST if workload == "burst" else N_IO
        due = w.q.clock.now() + 3.0 + n / 5000
        if workload == "burst":
            items = ({"call": "examples.shop:noop", "at": due, "queue": QUEUES[i % len(QUEUES)]} for i in range(n))
        else:
            items = ({"call": "examples.shop:hang", "args": {"path": os.devnull, "seconds": IO_WAIT}, "at": due,
                      "queue": QUEUES[i % len(QUEUES)]} for i in range(n))
        w.q.enqueue_many(items)
        # io: a runner that runs one job at a time takes 10 a pass (0.2 s of waiting), so that the jobs spread
        # over the runners instead of the first one hoarding a batch of 500 (10 s of waiting)
        batch = 500 if workload == "burst" or extra else 10
        procs = [start_runner(w, batch, extra) for _ in range(runners)]
        if w.q.clock.now() > due:
            raise RuntimeError("enqueue and runner start outlasted the lead time: raise it")
        split = CpuSplit(procs, list(redis_pids))
        time.sleep(max(0.0, due - w.q.clock.now()))
        split.start()
        try:
            done = wait_committed(w, due, procs)
            cpu = split.per_job_us(n)
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.communicate(timeout=60)
        succeeded = w.sql("SELECT COUNT(*) FROM {jobs} WHERE status = 'succeeded'")[0][0]
        if succeeded != n:
            raise RuntimeError(f"{succeeded} of {n} jobs succeeded")
        return {"jobs_per_s": round(n / (done - due)), "cpu_us_per_job": cpu}
    finally:
        w.close()


def _median_run(runs: int, *args) -> dict:
    """The run with the median throughput of `runs` (its CPU split with it)."""
    results = sorted((run(*args) for _ in range(runs)), key=lambda r: r["jobs_per_s"])
    return results[len(results) // 2]


def figures(database_url: str, plain_redis_url: str, runs: int = 1, plain_redis_pids: list[int] = ()) -> dict:
    """{topology: {workload: {runners: {jobs_per_s, cpu_us_per_job}}}} (burst: the median of `runs`; io: one run),
    and the runner used."""
    from scripts.redis_topology import Cluster

    extra = concurrency_args()
    out: dict = {"runner": "run_due.py " + (" ".join(extra) if extra else "(one job at a time: no --concurrency)"),
                 "n_burst": N_BURST, "n_io": N_IO, "io_wait_ms": IO_WAIT * 1000, "queues": len(QUEUES),
                 "topologies": {}}
    cluster = Cluster(masters=3, replicas=1)
    try:
        for name, url, pids in (("mariadb + redis", plain_redis_url, list(plain_redis_pids)),
                                ("mariadb + cluster (3 masters)", cluster.url, [p.pid for p in cluster.procs.values()])):
            out["topologies"][name] = {
                "burst": {k: _median_run(runs, database_url, url, "burst", k, extra, pids) for k in RUNNERS},
                "io": {k: run(database_url, url, "io", k, extra, pids) for k in RUNNERS}}
    finally:
        cluster.stop()
    return out


def report(f: dict) -> str:
    counts = " / ".join(map(str, RUNNERS))
    lines = [f"scaling: jobs/s with {counts} runner processes; {f['queues']} queues; runner: {f['runner']}",
             f"  {'':<30} {'burst no-op (N=' + format(f['n_burst'], ',') + ')':>26}   "
             f"{'io, 20 ms a job (N=' + format(f['n_io'], ',') + ')':>26}   burst CPU us/job: runners, db, redis"]
    for name, t in f["topologies"].items():
        burst = " / ".join(f"{t['burst'][k]['jobs_per_s']:,}" for k in RUNNERS)
        io = " / ".join(f"{t['io'][k]['jobs_per_s']:,}" for k in RUNNERS)
        cpu = "  ".join("{runners}, {mariadb}, {redis}".format(**t["burst"][k]["cpu_us_per_job"]) for k in RUNNERS)
        lines.append(f"  {name:<30} {burst:>26}   {io:>26}   {cpu}")
    return "\n".join(lines)


def main() -> None:
    from tests.chaos.servers import PrivateRedis

    redis = PrivateRedis()
    started = time.monotonic()
    try:
        result = figures(MYSQL, redis.url, int(os.environ.get("BENCH_RUNS", "1")), [redis.proc.pid])
    finally:
        redis.stop()
    result["seconds"] = round(time.monotonic() - started)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "scaling.json"), "w") as out:
        json.dump(result, out, indent=2, default=str)
    print(report(result))


if __name__ == "__main__":
    main()
