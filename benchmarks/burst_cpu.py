"""Where the CPU of a no-op burst goes: µs a job in the runner, its worker processes, mariadbd and redis-server.

    .venv/bin/python benchmarks/burst_cpu.py [--n 50000] [--runs 3]

Run by run, on the same servers: the current runner with its defaults, the current runner with
`--processes 0` (threads in the runner itself: no worker process), and the runner of record (commit
BENCH_BASELINE, default 4182bff, from a temporary git worktree; benchmarks/baseline.py). Each burst is
`delayq_side.burst`'s: N no-op jobs due at one moment T, one `run_due.py --for` runner, timed from T to
the last outcome committed; the CPU is read from /proc at T and at that moment (the runner's worker
processes sampled every 50 ms, as they may come and go). Prints one line a burst, then the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]

from baseline import Baseline  # noqa: E402
from procfs import pid_of, quiet  # noqa: E402

MYSQL = os.environ.get("DELAYQ_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")

# Runs in a child python with one tree's benchmarks/ first on the path (its delayq_side and its delayq), and
# this tree's last (procfs, which the runner of record's tree has not).
_MEASURE = r"""
import json, sys, threading, time
sys.path.insert(0, sys.argv[1])
sys.path.append(sys.argv[2])
import delayq_side as D
from procfs import children, cpu_seconds as cpu, pid_of
n, db, redis, flags = int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]

w = D.World(db, redis)
try:
    due = w.q.clock.now() + 2.0 + n / 5000
    w.q.enqueue_many({"call": D.NOOP, "at": due} for _ in range(n))
    runner = w.runner(*flags)
    first, last, done = {}, {}, threading.Event()

    def sample():
        while not done.is_set():
            for c in children(runner.pid):
                first.setdefault(c, cpu(c))
                last[c] = cpu(c)
            time.sleep(0.05)
    sampler = threading.Thread(target=sample)
    sampler.start()
    while w.q.clock.now() < due - 0.05:
        time.sleep(0.005)
    servers = {"mariadbd": pid_of("mariadbd"), "redis-server": pid_of("redis-server") if redis else None}
    before = {k: cpu(p) for k, p in servers.items() if p}
    before["runner"] = cpu(runner.pid)
    at_t = dict(last)
    committed, _ = w.wait_committed(due, n, runner)
    after = {k: cpu(p) for k, p in servers.items() if p}
    after["runner"] = cpu(runner.pid)
    done.set()
    sampler.join()
    worker = sum(last[c] - at_t.get(c, first[c]) for c in last)
    D.stop(runner)
    us = {k: round((after[k] - before[k]) / n * 1e6, 1) for k in after}
    us["workers"] = round(worker / n * 1e6, 1)
    print(json.dumps({"jobs_per_s": round(n / (committed - due)), "cpu_us": us}))
finally:
    w.close()
"""


def measure(benchmarks_dir: str, n: int, redis_url: str, flags: list[str]) -> dict:
    quiet(pid_of("mariadbd"))
    done = subprocess.run([sys.executable, "-c", _MEASURE, benchmarks_dir, HERE, str(n), MYSQL, redis_url, *flags],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"burst failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=50_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))
    args = p.parse_args()
    rows: dict[str, list[dict]] = {}
    with Baseline() as old:
        sides = [("current, defaults", HERE, []), ("current, --processes 0", HERE, ["--processes", "0"])]
        if old.path:
            sides.append((f"runner of record ({os.environ.get('BENCH_BASELINE', '4182bff')})",
                          os.path.join(old.path, "benchmarks"), []))
        else:
            print(f"no runner of record: {old.why_not}", file=sys.stderr)
        for _ in range(args.runs):
            for name, where, flags in sides:
                figure = measure(where, args.n, args.redis_url, flags)
                rows.setdefault(name, []).append(figure)
                print(f"{name:<34} {figure['jobs_per_s']:>7} jobs/s  CPU µs a job: {figure['cpu_us']}", flush=True)
    print(f"\nmedians of {args.runs}, N={args.n}:")
    for name, figures in rows.items():
        keys = figures[0]["cpu_us"].keys()
        cpu = {k: round(statistics.median(f["cpu_us"][k] for f in figures), 1) for k in keys}
        print(f"{name:<34} {statistics.median(f['jobs_per_s'] for f in figures):>9.0f} jobs/s  CPU µs a job: {cpu}")


if __name__ == "__main__":
    main()
